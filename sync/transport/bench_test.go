package transport_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/labpool/labpool/sync/transport"
)

func BenchmarkRoundTrip(b *testing.B) {
	srv, cli := newEndpoint(b, testConfig()), newEndpoint(b, testConfig())
	serve(b, srv, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "pong")
	}))
	c := cli.Client(srv.ID(), []string{srv.Addr().String()})
	get(b, c, "https://peer/ping") // dial outside the timing
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Get("https://peer/ping")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkStream measures the throughput of one response stream over QUIC.
func BenchmarkStream(b *testing.B) {
	benchStream(b, func(cli, srv *transport.Endpoint) *http.Client {
		return cli.Client(srv.ID(), []string{srv.Addr().String()})
	})
}

// benchStream measures one response stream of b.N MiB through the client
// that client makes.
func benchStream(b *testing.B, client func(cli, srv *transport.Endpoint) *http.Client) {
	const chunk = 1 << 20
	srv, cli := newEndpoint(b, testConfig()), newEndpoint(b, testConfig())
	serve(b, srv, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("mib"))
		buf := make([]byte, chunk)
		for range n {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	c := client(cli, srv)
	get(b, c, "https://peer/warmup?mib=1")
	b.SetBytes(chunk)
	b.ResetTimer()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet,
		"https://peer/stream?mib="+strconv.Itoa(b.N), nil)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != int64(b.N)*chunk {
		b.Fatalf("read %d bytes, %v; want %d", n, err, int64(b.N)*chunk)
	}
}
