package jobs

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// apiTest serves the jobs API of a manager over a fake runtime.
func apiTest(t *testing.T, gpus int) (*httptest.Server, *fakeRuntime) {
	t.Helper()
	rt := newFakeRuntime()
	m := newTestManager(t, rt, gpus, &memStore{})
	srv := httptest.NewServer(Handler(m, func(r *http.Request) Caller {
		role := r.Header.Get("X-Role")
		if role == "" {
			role = RoleMember
		}
		return Caller{ID: r.Header.Get("X-Owner"), Role: role}
	}))
	t.Cleanup(srv.Close)
	return srv, rt
}

// do sends a request as owner; a launch of an owner made by peer carries
// its proof, as call's does.
func do(t *testing.T, srv *httptest.Server, method, path, owner, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-Owner", owner)
	if s, ok := peers.Load(owner); ok && method == "POST" && path == "/v1/jobs" {
		if spec, err := DecodeSpec(strings.NewReader(body)); err == nil { // else the node refuses the body
			proof, err := s.(LaunchSigner).Prove("NODE", spec)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(ProofHeader, proof)
		}
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHandlerJobs(t *testing.T) {
	srv, rt := apiTest(t, 1)
	alice, bob := peer("alice").ID, peer("bob").ID
	resp, body := do(t, srv, "POST", "/v1/jobs", alice, `{"image":"img","gpus":1,"ports":[8888]}`)
	var j Job
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &j) != nil || j.State != Running || j.Owner != alice {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		code, contains           string
	}{
		{"refused", "POST", "/v1/jobs", `{"image":"img","privileged":true}`, 400, "refused", `refused by rule \"no-privileged\"`},
		{"unknown field", "POST", "/v1/jobs", `{"image":"img","hostconfig":{}}`, 400, "refused", "unknown field"},
		{"bad json", "POST", "/v1/jobs", `{"image":`, 400, "refused", "decode the job spec"},
		{"too many gpus", "POST", "/v1/jobs", `{"image":"img","gpus":2}`, 400, "refused", "this machine has 1 GPU"},
		{"busy", "POST", "/v1/jobs", `{"image":"img","gpus":1}`, 409, "gpus_busy", "GPU 0: job " + j.Name + " of " + alice[:9]},
		{"unknown job", "GET", "/v1/jobs/nope", "", 404, "not_found", "no such job"},
		{"stop unknown", "POST", "/v1/jobs/nope/stop", "", 404, "not_found", ""},
		{"bad tail", "GET", "/v1/jobs/" + j.ID + "/logs?tail=x", "", 400, "invalid", "tail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			who := bob
			if strings.Contains(tt.path, j.ID) {
				who = alice // the job's owner
			}
			resp, body := do(t, srv, tt.method, tt.path, who, tt.body)
			var e struct{ Code, Message string }
			if resp.StatusCode != tt.status || json.Unmarshal([]byte(body), &e) != nil || e.Code != tt.code || !strings.Contains(e.Message, strings.ReplaceAll(tt.contains, `\"`, `"`)) {
				t.Errorf("%s %s = %d %s, want %d %s %q", tt.method, tt.path, resp.StatusCode, body, tt.status, tt.code, tt.contains)
			}
		})
	}
	if _, body := do(t, srv, "POST", "/v1/jobs", bob, `{"image":"img","gpus":1,"queue":true}`); !strings.Contains(body, `"state":"queued"`) {
		t.Errorf("queued submit: %s", body)
	}
	var list []Job
	if resp, body := do(t, srv, "GET", "/v1/jobs", "", ""); resp.StatusCode != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 2 {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, srv, "GET", "/v1/jobs/"+j.ID+"/logs?follow=1&tail=5", alice, ""); resp.StatusCode != 200 || body != "line 1\nline 2\n" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("logs: %d %q", resp.StatusCode, body)
	}
	if calls := strings.Join(rt.callList(), ","); !strings.Contains(calls, "Logs "+j.Container+" true 5") {
		t.Errorf("logs call: %s", calls)
	}
	// The CLI and the app ask for every line with tail=-1.
	if resp, body := do(t, srv, "GET", "/v1/jobs/"+j.ID+"/logs?tail=-1", alice, ""); resp.StatusCode != 200 || body != "line 1\nline 2\n" {
		t.Errorf("logs tail=-1: %d %q", resp.StatusCode, body)
	}
	if calls := strings.Join(rt.callList(), ","); !strings.Contains(calls, "Logs "+j.Container+" false -1") {
		t.Errorf("logs call: %s", calls)
	}
	var st Stats
	if resp, body := do(t, srv, "GET", "/v1/jobs/"+j.ID+"/stats", alice, ""); resp.StatusCode != 200 || json.Unmarshal([]byte(body), &st) != nil || st.CPUPercent != 50 || len(st.GPUs) != 1 {
		t.Errorf("stats: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, srv, "POST", "/v1/jobs/"+j.ID+"/stop", alice, ""); resp.StatusCode != 200 || !strings.Contains(body, `"state":"exited"`) {
		t.Errorf("stop: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, srv, "GET", "/v1/jobs/"+j.ID+"/stats", alice, ""); resp.StatusCode != 409 {
		t.Errorf("stats of a stopped job: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, srv, "DELETE", "/v1/jobs/"+j.ID, alice, ""); resp.StatusCode != 204 {
		t.Errorf("remove: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, srv, "GET", "/v1/jobs/"+j.ID+"/logs", alice, ""); resp.StatusCode != 409 {
		t.Errorf("logs of a removed job: %d %s", resp.StatusCode, body)
	}
}

// TestHandlerBodyBounded: an oversized launch request is refused, not read
// to the end.
func TestHandlerBodyBounded(t *testing.T) {
	srv, _ := apiTest(t, 0)
	big := `{"image":"img","cmd":["` + strings.Repeat("a", maxSpec) + `"]}`
	if resp, body := do(t, srv, "POST", "/v1/jobs", "", big); resp.StatusCode != 400 {
		t.Errorf("oversized spec: %d %s", resp.StatusCode, body)
	}
}
