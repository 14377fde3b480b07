package alerts

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzHandler sends what the network may to the alerts API as an admin:
// nothing panics, every rule kept passes Check, and a webhook kept is
// http or https.
func FuzzHandler(f *testing.F) {
	f.Add("PUT", "/v1/alerts/rules/gpu-temp", `{"threshold": 90, "for_seconds": 60}`)
	f.Add("PUT", "/v1/alerts/rules/new-one", `{"metric": "power_w", "op": ">", "threshold": 300}`)
	f.Add("PUT", "/v1/alerts/rules/gpu-temp", `{"op": "!=", "threshold": 1e400}`)
	f.Add("POST", "/v1/alerts/mute", `{"rule": "gpu-temp", "gpu": 1, "until": "2999-01-01T00:00:00Z"}`)
	f.Add("POST", "/v1/alerts/mute", `{"rule": "../x", "gpu": -1}`)
	f.Add("PUT", "/v1/alerts/webhook", `{"url": "https://chat.example.org/h"}`)
	f.Add("PUT", "/v1/alerts/webhook", `{"url": "file:///etc/passwd"}`)
	f.Add("GET", "/v1/alerts/rules", ``)
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") {
			return // not a request a server receives
		}
		m, _ := newMachine()
		h := Handler(m, func(*http.Request) Caller { return Caller{ID: "ADMIN", Role: RoleAdmin} })
		req, err := http.NewRequest(method, "http://node"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		for _, r := range m.Eval.Rules() {
			if err := r.Check(); err != nil {
				t.Fatalf("a bad rule was kept: %+v: %v", r, err)
			}
		}
		if err := CheckWebhookURL(m.Webhook.URL()); err != nil {
			t.Fatalf("a bad webhook was kept: %v", err)
		}
		m.Eval.Evaluate(Reading{Time: time.Now(), GPUs: []GPUReading{{Index: 0, TempC: 99}}})
	})
}
