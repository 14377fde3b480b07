package metrics

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckHost is the DNS rebinding rule: a page of attacker.example whose
// name has been pointed at 127.0.0.1 reaches the endpoint with its own name
// in Host, which is refused; the addresses and names the endpoint serves
// pass.
func TestCheckHost(t *testing.T) {
	local := Config{Addr: "127.0.0.1:9400", Hostname: "dgx1"}
	remote := Config{Addr: "0.0.0.0:9400", AllowRemote: true, Hostname: "dgx1", Hosts: []string{"gpu1.lab.example"}}
	tests := []struct {
		name string
		cfg  Config
		host string
		ok   bool
	}{
		{"loopback ip", local, "127.0.0.1:9400", true},
		{"loopback v6", local, "[::1]:9400", true},
		{"localhost", local, "localhost:9400", true},
		{"localhost upper", local, "LOCALHOST:9400", true},
		{"rebinding name", local, "attacker.example:9400", false},
		{"machine name on loopback", local, "dgx1:9400", false},
		{"lan ip on loopback", local, "10.1.2.3:9400", false},
		{"empty", local, "", false},
		{"remote lan ip", remote, "10.1.2.3:9400", true},
		{"remote v6", remote, "[fe80::1%25eth0]:9400", true},
		{"remote hostname", remote, "dgx1:9400", true},
		{"remote mdns name", remote, "dgx1.local:9400", true},
		{"remote allowed name", remote, "gpu1.lab.example:9400", true},
		{"remote allowed name dot", remote, "gpu1.lab.example.:9400", true},
		{"remote rebinding", remote, "attacker.example:9400", false},
		{"remote lookalike", remote, "dgx1.attacker.example:9400", false},
		{"remote localhost", remote, "localhost:9400", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.CheckHost(tt.host)
			if tt.ok != (err == nil) {
				t.Fatalf("CheckHost(%q) = %v, want ok %v", tt.host, err, tt.ok)
			}
			if err != nil && (!errors.Is(err, ErrHost) || !strings.Contains(err.Error(), "(rule: ")) {
				t.Errorf("CheckHost(%q) = %v, want %v naming the rule", tt.host, err, ErrHost)
			}
		})
	}
}

// TestServeHTTPHost refuses a rebinding request with 421 and the rule,
// before any reading is written.
func TestServeHTTPHost(t *testing.T) {
	srv, err := New(Config{Addr: "127.0.0.1:0", Hostname: "dgx1"}, fixedSource{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://attacker.example:9400/metrics", nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 421 || !strings.Contains(rec.Body.String(), "refused:") || !strings.Contains(rec.Body.String(), "rule: metrics_host") {
		t.Errorf("GET with Host attacker.example = %d %q, want 421 naming the rule", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "DCGM") {
		t.Errorf("a refused request got readings: %q", rec.Body)
	}
}

// BenchmarkCheckHost is what the Host rule adds to a scrape.
func BenchmarkCheckHost(b *testing.B) {
	c := Config{Addr: "0.0.0.0:9400", AllowRemote: true, Hostname: "dgx1", Hosts: []string{"gpu1.lab.example"}}
	b.ReportAllocs()
	for b.Loop() {
		if c.CheckHost("gpu1.lab.example:9400") != nil {
			b.Fatal("refused")
		}
	}
}
