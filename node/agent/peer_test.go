//go:build linux && cgo

package agent

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/peerapi"
)

// part is a serving package named name with the calls of paths ("METHOD
// /path"), each answering with the header Part: name.
func part(name string, paths ...string) *peerapi.Mux {
	t := &peerapi.Table{}
	hs := map[peerapi.Spec]http.HandlerFunc{}
	for _, p := range paths {
		method, path, _ := strings.Cut(p, " ")
		r := peerapi.Add[peerapi.None, peerapi.None](t, method, path, peerapi.Members, "")
		hs[r.Spec] = func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Part", name) }
	}
	return t.Mux(hs)
}

func testParts(t *testing.T, open *[]string) Parts {
	tel, _ := newTelemetry(t, 1)
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Part", name) })
	}
	return Parts{
		Telemetry: tel,
		Stream:    Route{http.MethodGet, "/v1/replica/stream", named("stream")},
		Join:      Route{http.MethodPost, "/v1/pool/join", named("join")},
		Jobs:      part("jobs", "GET /v1/jobs", "POST /v1/jobs/{id}/stop", "POST /v1/gpus/{index}/clear"),
		Images:    part("images", "GET /v1/images"),
		Folders:   part("folders", "GET /v1/folders", "GET /v1/folders/{name}/ls"),
		Transfers: part("transfers", "POST /v1/transfers", "GET /v1/transfers/{id}"),
		Authorize: func(o []string, h http.Handler) http.Handler {
			*open = o
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Member") == "" && !slices.Contains(o, r.URL.Path) {
					http.Error(w, "members only", http.StatusForbidden)
					return
				}
				h.ServeHTTP(w, r)
			})
		},
	}
}

// TestPeerHandler: each call of each part's table reaches that part, and
// only through Authorize, which learns that joining is open; Specs lists
// them all; a call in no table is not found.
func TestPeerHandler(t *testing.T) {
	var open []string
	h := PeerHandler(testParts(t, &open))
	if !slices.Equal(open, []string{"/v1/pool/join"}) {
		t.Errorf("open paths %q; want the join path alone", open)
	}
	var patterns []string
	for _, s := range h.Specs() {
		patterns = append(patterns, s.Pattern())
	}
	want := []string{"GET /v1/replica/stream", "POST /v1/pool/join", "GET /v1/node/info", "GET /v1/node/sample",
		"GET /v1/jobs", "POST /v1/jobs/{id}/stop", "POST /v1/gpus/{index}/clear", "GET /v1/images",
		"GET /v1/folders", "GET /v1/folders/{name}/ls", "POST /v1/transfers", "GET /v1/transfers/{id}"}
	if !slices.Equal(patterns, want) {
		t.Errorf("Specs = %q;\nwant %q", patterns, want)
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
		{"GET", "/v1/jobs/abc/stop", true, "", http.StatusMethodNotAllowed},
		{"GET", "/v1/images", true, "images", http.StatusOK},
		{"POST", "/v1/gpus/0/clear", true, "jobs", http.StatusOK},
		{"GET", "/v1/folders", true, "folders", http.StatusOK},
		{"GET", "/v1/folders/data/ls", true, "folders", http.StatusOK},
		{"POST", "/v1/transfers", true, "transfers", http.StatusOK},
		{"GET", "/v1/transfers/abc", true, "transfers", http.StatusOK},
		{"GET", "/v1/folders", false, "", http.StatusForbidden},
		{"GET", "/v1/nothing", true, "", http.StatusNotFound},
		{"GET", "/v1/alerts/rules", true, "", http.StatusNotFound}, // no alerts part
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

// TestPeerHandlerRefusesTwoOwners: two parts that declare one call are a
// programming error, found when the handler is built.
func TestPeerHandlerRefusesTwoOwners(t *testing.T) {
	var open []string
	p := testParts(t, &open)
	p.Alerts = part("alerts", "GET /v1/images")
	defer func() {
		if recover() == nil {
			t.Error("PeerHandler mounted GET /v1/images twice")
		}
	}()
	PeerHandler(p)
}
