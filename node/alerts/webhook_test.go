package alerts

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"
)

func TestCheckWebhookURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"", true},
		{"https://chat.example.org/hooks/abc", true},
		{"http://10.0.0.5:8065/hooks/x", true},
		{"file:///etc/passwd", false},
		{"http://127.0.0.1:8098/hook", false},        // loopback, by address: refused when set
		{"http://[::1]/hook", false},                 //
		{"http://169.254.169.254/latest/", false},    // cloud metadata
		{"http://localhost:8098/hook", true},         // a name: checked when dialled
		{"https://chat.example.org:8443/hook", true}, //
		{"file:/etc/passwd", false},
		{"ftp://example.org/x", false},
		{"gopher://example.org", false},
		{"unix:///run/docker.sock", false},
		{"javascript:alert(1)", false},
		{"/hooks/relative", false},
		{"https:///nohost", false},
		{"https:opaque", false},
	}
	for _, tt := range tests {
		err := CheckWebhookURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckWebhookURL(%q) = %v; want ok %v", tt.url, err, tt.ok)
		}
	}
}

func TestWebhookPosts(t *testing.T) {
	var mu sync.Mutex
	var got []WebhookPayload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p WebhookPayload
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook got %s with %q", r.Method, r.Header.Get("Content-Type"))
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("decode payload: %v", err)
		}
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}))
	defer srv.Close()
	w := NewWebhook("gpu1", nil, discard())
	w.check = func(netip.Addr, bool) error { return nil } // the test server is on loopback
	if err := w.SetURL(byName(srv.URL) + "/hook"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	zero := 0
	now := time.Now()
	a := Alert{ID: "gpu-temp.gpu0.1", Node: selfID, Rule: RuleGPUTemp, Severity: Critical, GPU: &zero, Message: "GPU 0 at 90 °C", FiredAt: now}
	w.Send(a)
	a.ClearedAt = &now
	w.Send(a)
	relayed := Alert{ID: "gpu-temp.gpu1.2", Node: "OTHER", Rule: RuleGPUTemp, Severity: Warning, Message: "GPU 1 at 88 °C", FiredAt: now}
	w.SendAs("gpu2", relayed) // a relay posts another machine's alert under its name
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("webhook got %d posts, want 3", len(got))
	}
	if got[2].NodeName != "gpu2" || got[2].Alert.ID != relayed.ID || got[2].Text != "[warning] gpu-temp on gpu2: GPU 1 at 88 °C" {
		t.Errorf("relayed payload = %+v; want it named gpu2", got[2])
	}
	if got[0].State != "firing" || got[0].Alert.ID != a.ID || got[0].NodeName != "gpu1" || got[0].Text != "[critical] gpu-temp on gpu1: GPU 0 at 90 °C" {
		t.Errorf("firing payload = %+v", got[0])
	}
	if got[1].State != "cleared" || got[1].Alert.ClearedAt == nil {
		t.Errorf("clearing payload = %+v", got[1])
	}
}

// A webhook that never answers neither blocks Send (the evaluator) nor
// outlives its timeout.
func TestWebhookNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	w := NewWebhook("gpu1", nil, discard())
	w.check = func(netip.Addr, bool) error { return nil } // the test server is on loopback
	w.timeout = 100 * time.Millisecond
	if err := w.SetURL(byName(srv.URL)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	start := time.Now()
	for i := range 1000 {
		w.Send(Alert{ID: "a" + string(rune('0'+i%10))})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("1000 Sends to a stuck webhook took %v", d)
	}
	cancel()
	<-done
}

func TestWebhookWithoutURLDropsQuietly(t *testing.T) {
	w := NewWebhook("gpu1", nil, discard())
	w.Send(Alert{ID: "x"})
	if len(w.queue) != 0 {
		t.Errorf("an alert was queued with no webhook set")
	}
}

// A post says what changed: a rise or a fall of the incident's severity
// names the one before.
func TestWebhookPayloadChange(t *testing.T) {
	now := time.Now()
	a := Alert{ID: "gpu-health.gpu0.1", Rule: RuleGPUHealth, Severity: Critical, Message: "GPU 0 health is quarantined", FiredAt: now}
	raised, lowered, cleared := a, a, a
	raised.Was = Warning
	lowered.Severity, lowered.Was, lowered.Message = Warning, Critical, "GPU 0 health is warning"
	cleared.ClearedAt = &now
	for _, tt := range []struct {
		a                   Alert
		state, change, text string
	}{
		{a, "firing", "fired", "[critical] gpu-health on gpu1: GPU 0 health is quarantined"},
		{raised, "firing", "raised", "[critical, raised from warning] gpu-health on gpu1: GPU 0 health is quarantined"},
		{lowered, "firing", "lowered", "[warning, lowered from critical] gpu-health on gpu1: GPU 0 health is warning"},
		{cleared, "cleared", "cleared", "[cleared] gpu-health on gpu1: GPU 0 health is quarantined"},
	} {
		p := payload("gpu1", tt.a)
		if p.State != tt.state || p.Change != tt.change || p.Text != tt.text {
			t.Errorf("payload %s/%s/%q; want %s/%s/%q", p.State, p.Change, p.Text, tt.state, tt.change, tt.text)
		}
	}
}
