package transport_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// whoami answers the caller's device ID and the session's join exporter.
func whoami() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := transport.PeerID(r)
		ekm, err := transport.KeyingMaterial(r)
		if !ok || err != nil {
			http.Error(w, fmt.Sprint(ok, err), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s %x", id, ekm)
	})
}

func TestPinnedRoundTrip(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoami())
	c := cli.Client(srv.ID(), []string{"127.0.0.1:1", srv.Addr().String()})
	_, first := get(t, c, "https://peer/v1/whoami")
	// Another host in the URL and another Client for the same peer still
	// share the connection: the session exporter is the same.
	_, second := get(t, cli.Client(srv.ID(), nil), "https://elsewhere:9/v1/whoami")
	if want := cli.ID().String(); first[:len(want)] != want {
		t.Errorf("server saw %q; want caller %s", first, want)
	}
	if first != second {
		t.Errorf("second request used another connection: %q != %q", first, second)
	}
}

func TestPinnedWrongID(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoami())
	impostor := peer.NewID([]byte("someone else"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer/x", nil)
	resp, err := cli.Client(impostor, []string{srv.Addr().String()}).Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("request to the wrong device succeeded")
	}
	if !errors.Is(err, transport.ErrWrongPeer) {
		t.Errorf("error = %v; want ErrWrongPeer", err)
	}
}

func TestAuthorize(t *testing.T) {
	srv := newEndpoint(t, testConfig())
	member, stranger := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	allowed := func(id peer.ID) bool { return id == member.ID() }
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	serve(t, srv, transport.Authorize(allowed, []string{"/v1/pool/join"}, ok))
	addrs := []string{srv.Addr().String()}
	tests := []struct {
		name string
		from *transport.Endpoint
		path string
		want int
	}{
		{"member", member, "/v1/nodes", http.StatusOK},
		{"member on open path", member, "/v1/pool/join", http.StatusOK},
		{"stranger", stranger, "/v1/nodes", http.StatusForbidden},
		{"stranger on open path", stranger, "/v1/pool/join", http.StatusOK},
		{"stranger past open path", stranger, "/v1/pool/join/../../v1/nodes", http.StatusForbidden},
		{"stranger on open prefix", stranger, "/v1/pool/join/x", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, body := get(t, tt.from.Client(srv.ID(), addrs), "https://peer"+tt.path)
			if got != tt.want {
				t.Errorf("GET %s = %d %q; want %d", tt.path, got, body, tt.want)
			}
		})
	}
}

func TestDialAnyKeyingMaterial(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoami())
	var seen []string
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := cli.DialAny(ctx, srv.Addr().String())
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if conn.PeerID() != srv.ID() {
			t.Errorf("PeerID() = %v; want %v", conn.PeerID(), srv.ID())
		}
		ekm, err := conn.KeyingMaterial()
		if err != nil || len(ekm) != transport.ExporterLen {
			t.Fatalf("KeyingMaterial = %x, %v", ekm, err)
		}
		_, body := get(t, conn.Client(), "https://any/v1/whoami")
		if want := fmt.Sprintf("%s %s", cli.ID(), hex.EncodeToString(ekm)); body != want {
			t.Errorf("server side = %q; want %q", body, want)
		}
		seen = append(seen, body)
		conn.Close()
	}
	if seen[0] == seen[1] {
		t.Error("two sessions exported the same keying material")
	}
}

// lines streams NDJSON lines, pausing quiet between the first and the rest.
func lines(n int, quiet time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for i := range n {
			fmt.Fprintf(w, "{\"seq\":%d}\n", i)
			w.(http.Flusher).Flush()
			if i == 0 {
				select {
				case <-time.After(quiet):
				case <-r.Context().Done():
					return
				}
			}
		}
	})
}

func TestStreamOutlivesIdleTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.KeepAlive, cfg.IdleTimeout = 100*time.Millisecond, 500*time.Millisecond
	srv, cli := newEndpoint(t, cfg), newEndpoint(t, cfg)
	serve(t, srv, lines(50, 3*cfg.IdleTimeout))
	resp, err := cli.Client(srv.ID(), []string{srv.Addr().String()}).Get("https://peer/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		if want := fmt.Sprintf("{\"seq\":%d}", n); sc.Text() != want {
			t.Fatalf("line %d = %q; want %q", n, sc.Text(), want)
		}
		n++
	}
	if sc.Err() != nil || n != 50 {
		t.Fatalf("read %d lines, err %v; want 50, nil", n, sc.Err())
	}
}

// TestDeadPeer checks, with the default timeouts, that a stream from a
// peer that goes silent (no CONNECTION_CLOSE: the network just drops its
// packets) fails within KeepAlive + IdleTimeout (3 s).
func TestDeadPeer(t *testing.T) {
	cfg := testConfig()
	srv, cli := newEndpoint(t, cfg), newEndpoint(t, cfg)
	serve(t, srv, lines(2, time.Hour))
	proxy := newUDPProxy(t, srv.Addr())
	resp, err := cli.Client(srv.ID(), []string{proxy.addr()}).Get("https://peer/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	proxy.cut.Store(true)
	start := time.Now()
	_, err = r.ReadString('\n')
	took := time.Since(start)
	t.Logf("dead peer noticed after %v: %v", took, err)
	if err == nil {
		t.Fatal("read from a dead peer succeeded")
	}
	if limit := cfg.KeepAlive + cfg.IdleTimeout + 500*time.Millisecond; took > limit {
		t.Errorf("dead peer noticed after %v; want within %v", took, limit)
	}
}

func TestDropAndRedial(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	mux := http.NewServeMux()
	mux.Handle("/v1/stream", lines(2, time.Hour))
	mux.Handle("/v1/whoami", whoami())
	serve(t, srv, mux)
	c := cli.Client(srv.ID(), []string{srv.Addr().String()})
	_, before := get(t, c, "https://peer/v1/whoami")
	resp, err := c.Get("https://peer/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	r.ReadString('\n')
	cli.Drop(srv.ID())
	done := make(chan error, 1)
	go func() { _, err := r.ReadString('\n'); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("stream survived Drop")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("stream still open 2 s after Drop")
	}
	if _, after := get(t, c, "https://peer/v1/whoami"); after == before {
		t.Error("request after Drop reused the dropped connection")
	}
}

// TestPeerRestart: the server process goes away and comes back with the
// same identity and port; the client's next request must work.
func TestPeerRestart(t *testing.T) {
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := newEndpointAs(t, id, testConfig())
	stop := serve(t, first, whoami())
	cli := newEndpoint(t, testConfig())
	c := cli.Client(id.ID, []string{first.Addr().String()})
	get(t, c, "https://peer/v1/whoami")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	first.Close()
	cfg := testConfig()
	cfg.Listen = first.Addr().String()
	second := newEndpointAs(t, id, cfg)
	serve(t, second, whoami())
	if code, body := get(t, c, "https://peer/v1/whoami"); code != http.StatusOK {
		t.Fatalf("after restart: %d %q", code, body)
	}
}

func TestServeStopsWithOpenStream(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	stop := serve(t, srv, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	resp, err := cli.Client(srv.ID(), []string{srv.Addr().String()}).Get("https://peer/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := srv.Serve(context.Background(), whoami()); err == nil {
		t.Error("Serve on a closed endpoint succeeded")
	}
}

// TestPeerRestartUnannounced: the server dies without a word (its
// CONNECTION_CLOSE is lost) and comes back at once; the client's connection
// still looks alive, and the new process's stateless reset (keyed by the
// identity) must make the next request redial instead of hanging.
func TestPeerRestartUnannounced(t *testing.T) {
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := newEndpointAs(t, id, testConfig())
	stop := serve(t, first, whoami())
	proxy := newUDPProxy(t, first.Addr())
	cli := newEndpoint(t, testConfig())
	c := cli.Client(id.ID, []string{proxy.addr()})
	get(t, c, "https://peer/v1/whoami")
	proxy.cut.Store(true)
	stop()
	first.Close()
	cfg := testConfig()
	cfg.Listen = first.Addr().String()
	second := newEndpointAs(t, id, cfg)
	serve(t, second, whoami())
	time.Sleep(100 * time.Millisecond) // let the proxy drop the old CONNECTION_CLOSE
	proxy.cut.Store(false)
	start := time.Now()
	if code, body := get(t, c, "https://peer/v1/whoami"); code != http.StatusOK {
		t.Fatalf("after restart: %d %q", code, body)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("request after restart took %v; want a prompt redial", took)
	}
}

// TestDropDuringDial: a request waiting on a dial that Drop abandons (the
// peer unreachable, as across a network split) is sent again on the new
// connection, and succeeds once the path is back, instead of failing with
// the abandoned dial.
func TestDropDuringDial(t *testing.T) {
	srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
	serve(t, srv, whoami())
	proxy := newUDPProxy(t, srv.Addr())
	proxy.cut.Store(true) // the path is down
	c := cli.Client(srv.ID(), []string{proxy.addr()})
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer/v1/whoami", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for proxy.client.Load() == nil { // the dial's first packet arrived, and was lost
		if time.Now().After(deadline) {
			t.Fatal("no dial reached the proxy")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cli.Drop(srv.ID())
	proxy.cut.Store(false) // the path is back
	if err := <-done; err != nil {
		t.Fatalf("GET across a dropped dial: %v", err)
	}
}
