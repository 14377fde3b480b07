package peerapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name, path string
		args       []string
		q          url.Values
		want       string
		wantErr    bool
	}{
		{"no wildcard", "/v1/jobs", nil, nil, "/v1/jobs", false},
		{"one", "/v1/jobs/{id}/stop", []string{"a b/c"}, nil, "/v1/jobs/a%20b%2Fc/stop", false},
		{"last", "/v1/jobs/{id}", []string{"x"}, url.Values{"force": {"1"}}, "/v1/jobs/x?force=1", false},
		{"two", "/v1/a/{x}/b/{y}", []string{"1", "2"}, nil, "/v1/a/1/b/2", false},
		{"too few", "/v1/jobs/{id}", nil, nil, "", true},
		{"too many", "/v1/jobs", []string{"x"}, nil, "", true},
		{"unclosed", "/v1/jobs/{id", []string{"x"}, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := peerapi.Spec{Method: "GET", Path: tt.path}.URL(tt.args, tt.q)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("URL = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

type echo struct {
	Text string `json:"text"`
}

// TestCallRoundTrip: a call's body, path values, query and headers reach
// its handler, and its reply (or refusal) comes back.
func TestCallRoundTrip(t *testing.T) {
	tab := &peerapi.Table{}
	say := peerapi.Add[echo, echo](tab, "POST", "/v1/say/{who}", peerapi.Members, "")
	quiet := peerapi.Add[peerapi.None, peerapi.None](tab, "DELETE", "/v1/say/{who}", peerapi.Admins, "admins only")
	h := tab.Mux(map[peerapi.Spec]http.HandlerFunc{
		say.Spec: func(w http.ResponseWriter, r *http.Request) {
			var in echo
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil || r.Header.Get("Content-Type") != "application/json" {
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			json.NewEncoder(w).Encode(echo{in.Text + " to " + r.PathValue("who") + " " + r.URL.Query().Get("tone") + " " + r.Header.Get("X-Sign")})
		},
		quiet.Spec: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"code":"forbidden","message":"admins only"}`)
		},
	})
	l := &peerapitest.Loopback{Handler: h}
	peerapitest.RoundTrip(t, tab, l, map[string]func(*testing.T, peerapi.Conn){
		"POST /v1/say/{who}": func(t *testing.T, c peerapi.Conn) {
			got, err := say.Call(t.Context(), c, peerapi.Args{Path: []string{"bo b"}, Query: url.Values{"tone": {"low"}}, Header: http.Header{"X-Sign": {"s"}}}, echo{"hi"})
			if err != nil || got.Text != "hi to bo b low s" {
				t.Errorf("say = %+v, %v", got, err)
			}
		},
		"DELETE /v1/say/{who}": func(t *testing.T, c peerapi.Conn) {
			_, err := quiet.Call(t.Context(), c, peerapi.Path("bob"), peerapi.None{})
			var r *peerapitest.RefusedError
			if !errors.As(err, &r) || r.Message != "admins only" {
				t.Errorf("quiet = %v; want the refusal", err)
			}
		},
	})
}

// TestMuxRefusesGaps: a call without a handler, or a handler without a
// call, is a programming error found when the handler is built; two calls
// of one pattern, or a rule missing or out of place, when the table is.
func TestMuxRefusesGaps(t *testing.T) {
	tab := &peerapi.Table{}
	a := peerapi.Add[peerapi.None, peerapi.None](tab, "GET", "/v1/a", peerapi.Members, "")
	other := &peerapi.Table{}
	b := peerapi.Add[peerapi.None, peerapi.None](other, "GET", "/v1/b", peerapi.Members, "")
	ok := func(http.ResponseWriter, *http.Request) {}
	for name, handlers := range map[string]map[peerapi.Spec]http.HandlerFunc{
		"missing": {},
		"extra":   {a.Spec: ok, b.Spec: ok},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Mux did not panic")
				}
			}()
			tab.Mux(handlers)
		})
	}
	for name, add := range map[string]func(){
		"two calls":     func() { peerapi.Add[peerapi.None, peerapi.None](tab, "GET", "/v1/a", peerapi.Admins, "admins only") },
		"need one":      func() { peerapi.Add[peerapi.None, peerapi.None](tab, "GET", "/v1/c", peerapi.Admins, "") },
		"a rule is for": func() { peerapi.Add[peerapi.None, peerapi.None](tab, "GET", "/v1/d", peerapi.Members, "admins only") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), name) {
					t.Errorf("Add = %v; want a panic naming %q", r, name)
				}
			}()
			add()
		})
	}
}

// TestLoopbackFindsTypos: a client whose path or method has a typo is
// served by no pattern of the mux, which is what RoundTrip refuses.
func TestLoopbackFindsTypos(t *testing.T) {
	tab := &peerapi.Table{}
	get := peerapi.Add[peerapi.None, echo](tab, "GET", "/v1/thing/{id}", peerapi.Members, "")
	h := tab.Mux(map[peerapi.Spec]http.HandlerFunc{get.Spec: func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"text":"x"}`)
	}})
	typo := peerapi.Route[peerapi.None, echo]{Spec: peerapi.Spec{Method: "GET", Path: "/v1/things/{id}", In: get.In, Out: get.Out}}
	wrongMethod := peerapi.Route[peerapi.None, echo]{Spec: peerapi.Spec{Method: "POST", Path: get.Path, In: get.In, Out: get.Out}}
	tests := []struct {
		name string
		r    peerapi.Route[peerapi.None, echo]
		want string
	}{
		{"right", get, "GET /v1/thing/{id}"},
		{"path", typo, ""},
		{"method", wrongMethod, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &peerapitest.Loopback{Handler: h}
			tt.r.Call(t.Context(), peerapi.Conn{Doer: l}, peerapi.Path("x"), peerapi.None{})
			if got := l.Served(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("served by %q; want %q", got, tt.want)
			}
		})
	}
}
