package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// whoHandler answers the asking device's ID and the protocol it came over,
// then the request's body, if any.
var whoHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	id, _ := transport.PeerID(r)
	body, _ := io.ReadAll(r.Body)
	if r.Method == http.MethodPost {
		io.WriteString(w, r.Proto+" "+id.String()+" "+string(body))
		return
	}
	io.WriteString(w, r.Proto+" "+id.String())
})

func TestDataPathPinned(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoHandler)
	if srv.DataAddr() == nil || srv.DataAddr().Port != srv.Addr().Port {
		t.Fatalf("data path on %v, want tcp port %d", srv.DataAddr(), srv.Addr().Port)
	}
	c := cli.DataClient(srv.ID(), []string{srv.Addr().String()})
	code, body := get(t, c, "https://peer/who")
	if code != 200 || body != "HTTP/1.1 "+cli.ID().String() {
		t.Fatalf("data path answered %d %q, want HTTP/1.1 and the client's ID", code, body)
	}
	// The control client still speaks HTTP/3.
	if _, body := get(t, cli.Client(srv.ID(), nil), "https://peer/who"); body != "HTTP/3.0 "+cli.ID().String() {
		t.Fatalf("control path answered %q", body)
	}
}

func TestDataPathWrongID(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoHandler)
	other, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := cli.DataClient(other.ID, []string{srv.Addr().String()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer/who", nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("a data request reached a device other than the one pinned")
	}
	if !errors.Is(err, transport.ErrWrongPeer) {
		t.Fatalf("err = %v, want ErrWrongPeer (no silent fallback)", err)
	}
}

func TestDataPathAuthorize(t *testing.T) {
	srv, member, stranger := newEndpoint(t, testConfig()), newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, transport.Authorize(func(id peer.ID) bool { return id == member.ID() }, nil, whoHandler))
	if code, _ := get(t, member.DataClient(srv.ID(), []string{srv.Addr().String()}), "https://peer/x"); code != 200 {
		t.Fatalf("member got %d", code)
	}
	if code, _ := get(t, stranger.DataClient(srv.ID(), []string{srv.Addr().String()}), "https://peer/x"); code != http.StatusForbidden {
		t.Fatalf("stranger got %d, want 403", code)
	}
}

// TestDataPathFallsBackToQUIC: where the TCP port does not answer, data
// requests go over QUIC.
func TestDataPathFallsBackToQUIC(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoHandler)
	// A UDP port whose TCP twin nobody listens on: a proxy to srv.
	p := newUDPProxy(t, srv.Addr())
	if ln, err := net.Listen("tcp", p.addr()); err == nil {
		ln.Close() // make sure the port is closed, not merely unserved
	}
	// The first request finds TCP closed: a POST, whose body must cross
	// whole on the retry over QUIC.
	c := cli.DataClient(srv.ID(), []string{p.addr()})
	resp, err := c.Post("https://peer/echo", "text/plain", strings.NewReader("a body to send twice"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "HTTP/3.0 "+cli.ID().String()+" a body to send twice" {
		t.Fatalf("fallback POST answered %q, want HTTP/3 and the whole body", got)
	}
	if code, body := get(t, c, "https://peer/who"); code != 200 || body != "HTTP/3.0 "+cli.ID().String() {
		t.Fatalf("fallback answered %d %q, want HTTP/3", code, body)
	}
}

// BenchmarkDataStream measures one response stream on the data path, to
// set beside BenchmarkStream (QUIC).
func BenchmarkDataStream(b *testing.B) {
	benchStream(b, func(cli, srv *transport.Endpoint) *http.Client {
		return cli.DataClient(srv.ID(), []string{srv.Addr().String()})
	})
}

// TestDataPathClosed: a closed endpoint sends nothing over the data path.
func TestDataPathClosed(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoHandler)
	c := cli.DataClient(srv.ID(), []string{srv.Addr().String()})
	get(t, c, "https://peer/who")
	cli.Close()
	resp, err := c.Get("https://peer/who")
	if err == nil {
		resp.Body.Close()
		t.Fatal("a request went out after Close")
	}
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("err = %v, want net.ErrClosed", err)
	}
}
