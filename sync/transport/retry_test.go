package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// TestRetryAfterRestart: the peer is killed without a word and a new
// process of the same device serves at the same address; the client's
// connection still looks alive. The next request meets the new process's
// stateless reset. Requests safe to repeat are sent again on a new
// connection (their bodies whole); the others fail and are never repeated.
func TestRetryAfterRestart(t *testing.T) {
	tests := []struct {
		name   string
		method string
		safe   bool
		want   bool // succeeds after the restart
	}{
		{"get", http.MethodGet, false, true},
		{"put with a body", http.MethodPut, false, true},
		{"delete", http.MethodDelete, false, true},
		{"post marked safe, with a body", http.MethodPost, true, true},
		{"post not marked", http.MethodPost, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var served atomic.Int32 // requests the second process handled
			echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Write(b)
			})
			second := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
				echo(w, r)
			})
			c := restartedPeer(t, echo, second)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tt.safe {
				ctx = transport.SafeToRetry(ctx)
			}
			const body = "the whole body, sent twice if need be"
			req, _ := http.NewRequestWithContext(ctx, tt.method, "https://peer/echo", strings.NewReader(body))
			resp, err := c.Do(req)
			if !tt.want {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s after a restart succeeded; want the dead connection's error", tt.method)
				}
				if !transport.ConnectionLost(err) {
					t.Errorf("error %v; want one ConnectionLost recognises", err)
				}
				if n := served.Load(); n != 0 {
					t.Errorf("the new process served %d requests; want 0 (never repeated)", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s after a restart: %v", tt.method, err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || (tt.method != http.MethodHead && string(got) != body) {
				t.Errorf("got %d %q; want 200 %q", resp.StatusCode, got, body)
			}
			if n := served.Load(); n != 1 {
				t.Errorf("the new process served %d requests; want 1", n)
			}
		})
	}
}

// restartedPeer serves first, makes a client's connection to it, kills it
// unannounced (its CONNECTION_CLOSE never reaches the client) and serves
// second as the same device at the same address. It returns the client.
func restartedPeer(t *testing.T, first, second http.Handler) *http.Client {
	t.Helper()
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := newEndpointAs(t, id, testConfig())
	stop := serve(t, a, first)
	px := newSwitchProxy(t, a.Addr())
	cli := newEndpoint(t, testConfig())
	c := cli.Client(id.ID, []string{px.addr()})
	req, _ := http.NewRequest(http.MethodGet, "https://peer/", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	px.detach() // from now on, nothing the first process sends arrives
	stop()
	a.Close()
	cfg := testConfig()
	cfg.Listen = a.Addr().String()
	b := newEndpointAs(t, id, cfg)
	serve(t, b, second)
	px.attach(t, b.Addr())
	return c
}

// switchProxy forwards one client's datagrams to a backend socket; detach
// drops everything from then on, attach opens a new backend socket, so that
// what the old backend sent late can never reach the client.
type switchProxy struct {
	front  *net.UDPConn
	client atomic.Pointer[net.UDPAddr]
	back   atomic.Pointer[net.UDPConn] // nil while detached
	wg     sync.WaitGroup
}

func newSwitchProxy(t *testing.T, target *net.UDPAddr) *switchProxy {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{front: front}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 65536)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.client.Store(from)
			if b := p.back.Load(); err == nil && b != nil {
				b.Write(buf[:n])
			}
		}
	}()
	t.Cleanup(func() {
		front.Close()
		if b := p.back.Swap(nil); b != nil {
			b.Close()
		}
		p.wg.Wait()
	})
	p.attach(t, target)
	return p
}

func (p *switchProxy) attach(t *testing.T, target *net.UDPAddr) {
	t.Helper()
	back, err := net.DialUDP("udp", nil, target)
	if err != nil {
		t.Fatal(err)
	}
	p.back.Store(back)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 65536)
		for {
			n, err := back.Read(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if c := p.client.Load(); err == nil && c != nil && p.back.Load() == back {
				p.front.WriteToUDP(buf[:n], c)
			}
		}
	}()
}

// detach drops what the current backend sends from now on, and closes it.
func (p *switchProxy) detach() {
	if b := p.back.Swap(nil); b != nil {
		b.Close()
	}
}

func (p *switchProxy) addr() string { return p.front.LocalAddr().String() }
