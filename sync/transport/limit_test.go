package transport_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// logBuffer is a log a test can read while endpoints write it.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// strangerDials opens n QUIC connections to srv from fresh devices bound
// to ip and returns how many handshakes succeeded.
func strangerDials(t *testing.T, srv *transport.Endpoint, ip string, n int) int {
	t.Helper()
	cfg := testConfig()
	cfg.Listen, cfg.QUICOnly = ip+":0", true
	stranger := newEndpoint(t, cfg)
	ok := 0
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := stranger.DialAny(ctx, fmt.Sprintf("127.0.0.1:%d", srv.Addr().Port))
		cancel()
		if err == nil {
			ok++
			c.Close()
		}
	}
	return ok
}

// TestHandshakeBudget: a source that keeps handshaking is refused once it
// has spent its budgets (5 from its address unproven, then 5 after a
// Retry proved it), on QUIC and on the TCP data path, and logged once for
// each budget; another source is not affected.
func TestHandshakeBudget(t *testing.T) {
	var logs logBuffer
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Listen = "0.0.0.0:0"
	cfg.Handshakes = transport.LimiterConfig{What: "handshakes", Burst: 5, Rate: 0.01}
	srv, err := transport.New(id, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	serve(t, srv, whoami())

	start := time.Now()
	if got := strangerDials(t, srv, "127.0.0.1", 20); got != 10 {
		t.Errorf("%d of 20 QUIC handshakes from one source succeeded; want the budgets of 5 and 5", got)
	}
	t.Logf("20 QUIC dials from one source took %v", time.Since(start).Round(time.Millisecond))
	if got := tcpDials(t, srv, "127.0.0.1", 5); got != 0 {
		t.Errorf("%d TCP handshakes succeeded from a source over its budget; want 0", got)
	}
	if got := strangerDials(t, srv, "127.0.0.2", 3); got != 3 {
		t.Errorf("%d of 3 handshakes from another source succeeded; want 3", got)
	}
	if n := logs.count("source over its budget"); n != 2 {
		t.Errorf("%d log lines about the refused source; want 2 (one a budget):\n%s", n, logs.b.String())
	}
}

// tcpDials makes n TLS handshakes with srv's data path from ip.
func tcpDials(t *testing.T, srv *transport.Endpoint, ip string, n int) int {
	t.Helper()
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for range n {
		d := &tls.Dialer{
			NetDialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 2 * time.Second},
			Config: &tls.Config{Certificates: []tls.Certificate{id.Cert}, InsecureSkipVerify: true,
				NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS13},
		}
		c, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.DataAddr().Port))
		if err == nil {
			ok++
			c.Close()
		}
	}
	return ok
}

// TestRefusalBudget: a stranger refused 10 times gets 429 after that, on
// closed and open paths (its failed joins count), while a member from the
// same address is never limited.
func TestRefusalBudget(t *testing.T) {
	srv := newEndpoint(t, testConfig())
	member, stranger := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	allowed := func(id peer.ID) bool { return id == member.ID() }
	join := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "wrong code", http.StatusForbidden)
	})
	reached := 0
	mux := http.NewServeMux()
	mux.Handle("/v1/pool/join", transport.RateLimited(srv.Refusals(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		join(w, r)
	})))
	mux.Handle("/v1/nodes", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	serve(t, srv, transport.AuthorizeLimited(srv.Refusals(), allowed, []string{"/v1/pool/join"}, mux))
	addrs := []string{srv.Addr().String()}
	sc, mc := stranger.Client(srv.ID(), addrs), member.Client(srv.ID(), addrs)

	var got []int
	for i := range 14 {
		path := "/v1/nodes"
		if i%2 == 1 {
			path = "/v1/pool/join"
		}
		code, _ := get(t, sc, "https://peer"+path)
		got = append(got, code)
	}
	want := fmt.Sprint(slicesRepeat(http.StatusForbidden, 10), slicesRepeat(http.StatusTooManyRequests, 4))
	if g := fmt.Sprint(got[:10], got[10:]); g != want {
		t.Errorf("stranger's answers %v; want %s", got, want)
	}
	if reached != 5 {
		t.Errorf("join handler reached %d times; want 5 (not once the source is limited)", reached)
	}
	if code, _ := get(t, mc, "https://peer/v1/nodes"); code != http.StatusOK {
		t.Errorf("member from the same address got %d; want 200", code)
	}
}

func slicesRepeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}
