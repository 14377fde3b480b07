package alerts

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckDestination(t *testing.T) {
	tests := []struct {
		ip            string
		ok, okPrivate bool
	}{
		{"93.184.216.34", true, true},
		{"2606:2800:220:1:248:1893:25c8:1946", true, true},
		{"127.0.0.1", false, false},
		{"127.8.9.10", false, false},
		{"::1", false, false},
		{"::ffff:127.0.0.1", false, false},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"169.254.169.254", false, false}, // AWS, GCP, Azure, Oracle metadata
		{"169.254.1.1", false, false},
		{"fe80::1", false, false},
		{"fd00:ec2::254", false, false},   // AWS metadata over IPv6
		{"100.100.100.200", false, false}, // Alibaba metadata
		{"168.63.129.16", false, false},   // Azure wire server
		{"64:ff9b::7f00:1", false, false}, // NAT64 of 127.0.0.1
		{"224.0.0.251", false, false},
		{"255.255.255.255", false, false},
		{"10.0.0.5", false, true},
		{"172.16.3.4", false, true},
		{"192.168.1.10", false, true},
		{"fd12:3456::1", false, true},
		{"100.64.0.7", false, true},
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.ip)
		for _, private := range []bool{false, true} {
			want := tt.ok || (private && tt.okPrivate)
			err := CheckDestination(ip, private)
			if (err == nil) != want {
				t.Errorf("CheckDestination(%s, private %v) = %v; want ok %v", ip, private, err, want)
			}
			if err != nil && (!errors.Is(err, ErrWebhookRefused) || !strings.Contains(err.Error(), "refused: ") || !strings.Contains(err.Error(), "(rule: ")) {
				t.Errorf("CheckDestination(%s) = %v; want %v naming the rule", ip, err, ErrWebhookRefused)
			}
		}
	}
}

// TestWebhookRefusesLoopback: a webhook on this machine's loopback is
// refused when dialled (the address the name resolved to is checked), and
// the server is never reached; the refusal is logged once however many
// alerts follow.
func TestWebhookRefusesLoopback(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	var logs bytes.Buffer
	w := NewWebhook("gpu1", nil, slog.New(slog.NewTextHandler(&logs, nil)))
	// By name: "localhost" resolves to loopback, which the dialler refuses.
	if err := w.SetURL(byName(srv.URL) + "/hook"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		err := w.post(context.Background(), posted{"gpu1", Alert{ID: "a"}})
		if !errors.Is(err, ErrWebhookRefused) || !strings.Contains(err.Error(), "rule: webhook_destination") {
			t.Fatalf("post to loopback = %v; want %v naming the rule", err, ErrWebhookRefused)
		}
		w.logPostError(Alert{ID: "a"}, err)
	}
	if hits.Load() != 0 {
		t.Errorf("the loopback server got %d posts", hits.Load())
	}
	if n := strings.Count(logs.String(), "rule: webhook_destination"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestWebhookFollowsNoRedirect: a webhook answering with a redirect (here
// to this machine's loopback) is refused, naming the rule; the target of the
// redirect is never asked.
func TestWebhookFollowsNoRedirect(t *testing.T) {
	var target atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/inside" {
			target.Add(1)
			return
		}
		http.Redirect(w, r, "/inside", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	w := NewWebhook("gpu1", nil, discard())
	w.check = func(netip.Addr, bool) error { return nil } // this test's server is on loopback
	if err := w.SetURL(byName(srv.URL) + "/hook"); err != nil {
		t.Fatal(err)
	}
	err := w.post(context.Background(), posted{"gpu1", Alert{ID: "a"}})
	if !errors.Is(err, ErrWebhookRefused) || !strings.Contains(err.Error(), "rule: webhook_no_redirect") {
		t.Errorf("post to a redirecting webhook = %v; want %v naming rule webhook_no_redirect", err, ErrWebhookRefused)
	}
	if target.Load() != 0 {
		t.Errorf("the redirect was followed")
	}
}

// TestWebhookOffByPolicy: this machine's own user turned posting off:
// nothing is queued, whatever the pool's admins set.
func TestWebhookOffByPolicy(t *testing.T) {
	var pol atomic.Value
	pol.Store(WebhookPolicy{Off: true})
	w := NewWebhook("gpu1", func() WebhookPolicy { return pol.Load().(WebhookPolicy) }, discard())
	w.SetURL("https://chat.example.org/hook")
	w.Send(Alert{ID: "x"})
	if len(w.queue) != 0 {
		t.Errorf("an alert was queued with posting turned off")
	}
	pol.Store(WebhookPolicy{})
	w.Send(Alert{ID: "y"})
	if len(w.queue) != 1 {
		t.Errorf("an alert was not queued with posting turned on")
	}
}

// TestWebhookPrivateByPolicy: a private address is refused until this
// machine's policy allows private ranges.
func TestWebhookPrivateByPolicy(t *testing.T) {
	var pol atomic.Value
	pol.Store(WebhookPolicy{})
	w := NewWebhook("gpu1", func() WebhookPolicy { return pol.Load().(WebhookPolicy) }, discard())
	w.timeout = 200 * time.Millisecond
	w.SetURL("http://10.255.255.1:9/hook") // nothing answers there: the dial times out
	err := w.post(context.Background(), posted{"gpu1", Alert{ID: "a"}})
	if !errors.Is(err, ErrWebhookRefused) || !strings.Contains(err.Error(), "--webhook-private allow") {
		t.Errorf("post to a private address = %v; want a refusal saying how to allow it", err)
	}
	pol.Store(WebhookPolicy{Private: true})
	if err := w.post(context.Background(), posted{"gpu1", Alert{ID: "a"}}); errors.Is(err, ErrWebhookRefused) {
		t.Errorf("post to a private address allowed by policy = %v; want it attempted", err)
	}
}

// byName is a test server's URL by the name localhost: a loopback address
// is refused as soon as it is set (CheckWebhookURL), a name when dialled.
func byName(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }
