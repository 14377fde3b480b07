package transport_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/transport"
)

// trickle writes a byte every 20 ms until the request or the connection
// ends: a long-lived stream such as a log follow or a tunnel.
func trickle() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if _, err := w.Write([]byte{'.'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
		}
	})
}

// openStream starts GET /stream through c and returns a channel that gets
// the time the body ended (with an error or EOF), once it has received the
// first byte.
func openStream(t *testing.T, name string, c *http.Client) <-chan time.Time {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer/stream", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: open stream: %v", name, err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1)); err != nil {
		t.Fatalf("%s: first byte: %v", name, err)
	}
	ended := make(chan time.Time, 1)
	go func() {
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		ended <- time.Now()
	}()
	return ended
}

// TestDisconnect: A.Disconnect(B) ends every stream between A and B within
// a second, in both directions and over both QUIC and the TCP data path,
// and leaves C's stream to A alone.
func TestDisconnect(t *testing.T) {
	a, b, c := newEndpoint(t, testConfig()), newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	for _, ep := range []*transport.Endpoint{a, b, c} {
		serve(t, ep, trickle())
	}
	aAddr, bAddr := []string{a.Addr().String()}, []string{b.Addr().String()}
	streams := map[string]<-chan time.Time{
		"B to A over QUIC": openStream(t, "B to A over QUIC", b.Client(a.ID(), aAddr)),
		"A to B over QUIC": openStream(t, "A to B over QUIC", a.Client(b.ID(), bAddr)),
		"B to A over TCP":  openStream(t, "B to A over TCP", b.DataClient(a.ID(), aAddr)),
		"A to B over TCP":  openStream(t, "A to B over TCP", a.DataClient(b.ID(), bAddr)),
	}
	bystander := openStream(t, "C to A", c.Client(a.ID(), aAddr))
	start := time.Now()
	a.Disconnect(b.ID())
	deadline := time.After(time.Second)
	for name, ended := range streams {
		select {
		case at := <-ended:
			t.Logf("%s ended after %v", name, at.Sub(start).Round(time.Millisecond))
		case <-deadline:
			t.Errorf("%s still flows 1 s after Disconnect", name)
		}
	}
	select {
	case <-bystander:
		t.Error("C's stream to A ended with B's")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestProvenAddr: the address where the pinned handshake succeeded is
// known, not the dead one listed before it.
func TestProvenAddr(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoami())
	if _, ok := cli.ProvenAddr(srv.ID()); ok {
		t.Error("an address is proven before any dial")
	}
	get(t, cli.Client(srv.ID(), []string{"127.0.0.1:1", srv.Addr().String()}), "https://peer/v1/whoami")
	if got, ok := cli.ProvenAddr(srv.ID()); !ok || got != srv.Addr().String() {
		t.Errorf("ProvenAddr = %q, %v; want %s", got, ok, srv.Addr())
	}
}

// TestSessionIPs: each side knows the IP its live session with the other
// comes from, whoever dialed; a device with no session has none, and a
// session ended by Disconnect no longer counts.
func TestSessionIPs(t *testing.T) {
	srv, cli, stranger := newEndpoint(t, testConfig()), newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoami())
	get(t, cli.Client(srv.ID(), []string{srv.Addr().String()}), "https://peer/v1/whoami")
	loopback := netip.MustParseAddr("127.0.0.1")
	if got := srv.SessionIPs(cli.ID()); !slices.Equal(got, []netip.Addr{loopback}) {
		t.Errorf("server: SessionIPs = %v; want [%s]", got, loopback)
	}
	if got := cli.SessionIPs(srv.ID()); !slices.Equal(got, []netip.Addr{loopback}) {
		t.Errorf("client: SessionIPs = %v; want [%s]", got, loopback)
	}
	if got := srv.SessionIPs(stranger.ID()); len(got) != 0 {
		t.Errorf("SessionIPs of a device with no session = %v", got)
	}
	srv.Disconnect(cli.ID())
	if got := srv.SessionIPs(cli.ID()); len(got) != 0 {
		t.Errorf("SessionIPs after Disconnect = %v", got)
	}
}
