package transport_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

func testConfig() transport.Config {
	cfg := transport.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	return cfg
}

func newEndpoint(t testing.TB, cfg transport.Config) *transport.Endpoint {
	t.Helper()
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newEndpointAs(t, id, cfg)
}

func newEndpointAs(t testing.TB, id *peer.Identity, cfg transport.Config) *transport.Endpoint {
	t.Helper()
	ep, err := transport.New(id, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// serve runs ep.Serve(h) until the returned stop is called (or the test
// ends); stop returns Serve's error.
func serve(t testing.TB, ep *transport.Endpoint, h http.Handler) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ep.Serve(ctx, h) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second):
				err = errors.New("Serve did not return 10 s after cancel")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return stop
}

func get(t testing.TB, c *http.Client, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// udpProxy forwards one client's datagrams to a target until cut, after
// which it drops everything in both directions, as a dead host would.
type udpProxy struct {
	front  *net.UDPConn
	back   *net.UDPConn
	client atomic.Pointer[net.UDPAddr]
	cut    atomic.Bool
	wg     sync.WaitGroup
}

func newUDPProxy(t testing.TB, target *net.UDPAddr) *udpProxy {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp", nil, target)
	if err != nil {
		t.Fatal(err)
	}
	p := &udpProxy{front: front, back: back}
	p.wg.Add(2)
	go p.forward(func(b []byte) (int, error) {
		n, from, err := front.ReadFromUDP(b)
		if err == nil {
			p.client.Store(from)
		}
		return n, err
	}, func(b []byte) { back.Write(b) })
	go p.forward(back.Read, func(b []byte) {
		if c := p.client.Load(); c != nil {
			front.WriteToUDP(b, c)
		}
	})
	t.Cleanup(func() {
		front.Close()
		back.Close()
		p.wg.Wait()
	})
	return p
}

func (p *udpProxy) forward(read func([]byte) (int, error), write func([]byte)) {
	defer p.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, err := read(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err == nil && !p.cut.Load() {
			write(buf[:n])
		}
	}
}

func (p *udpProxy) addr() string { return p.front.LocalAddr().String() }
