//go:build linux && cgo

package agent

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestPeerHandler: each path reaches the part that serves it, and only
// through Authorize, which learns that joining is open.
func TestPeerHandler(t *testing.T) {
	tel, _ := newTelemetry(t, 1)
	part := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Part", name) })
	}
	var open []string
	h := PeerHandler(Parts{
		Telemetry: tel,
		Stream:    Route{http.MethodGet, "/v1/replica/stream", part("stream")},
		Join:      Route{http.MethodPost, "/v1/pool/join", part("join")},
		Jobs:      part("jobs"),
		Images:    part("images"),
		Folders:   part("folders"),
		Transfers: part("transfers"),
		Authorize: func(o []string, h http.Handler) http.Handler {
			open = o
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Member") == "" && !slices.Contains(o, r.URL.Path) {
					http.Error(w, "members only", http.StatusForbidden)
					return
				}
				h.ServeHTTP(w, r)
			})
		},
	})
	if !slices.Equal(open, []string{"/v1/pool/join"}) {
		t.Errorf("open paths %q; want the join path alone", open)
	}
	tests := []struct {
		method, path string
		member       bool
		wantPart     string
		wantStatus   int
	}{
		{"GET", "/v1/node/info", true, "", http.StatusOK},
		{"GET", "/v1/replica/stream", true, "stream", http.StatusOK},
		{"POST", "/v1/replica/stream", true, "", http.StatusMethodNotAllowed},
		{"POST", "/v1/pool/join", false, "join", http.StatusOK},
		{"GET", "/v1/jobs", true, "jobs", http.StatusOK},
		{"POST", "/v1/jobs/abc/stop", true, "jobs", http.StatusOK},
		{"GET", "/v1/images/x", true, "images", http.StatusOK},
		{"GET", "/v1/images", true, "images", http.StatusOK},
		{"POST", "/v1/gpus/0/clear", true, "jobs", http.StatusOK},
		{"GET", "/v1/folders", true, "folders", http.StatusOK},
		{"GET", "/v1/folders/data/ls", true, "folders", http.StatusOK},
		{"POST", "/v1/transfers", true, "transfers", http.StatusOK},
		{"GET", "/v1/transfers/abc", true, "transfers", http.StatusOK},
		{"GET", "/v1/folders", false, "", http.StatusForbidden},
		{"GET", "/v1/nothing", true, "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.member {
				req.Header.Set("Member", "yes")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.wantStatus || w.Header().Get("Part") != tt.wantPart {
				t.Errorf("status %d, part %q; want %d, %q", w.Code, w.Header().Get("Part"), tt.wantStatus, tt.wantPart)
			}
		})
	}
}
