package transport_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/transport"
)

// BenchmarkHandshake is one full QUIC handshake of a new connection, both
// sides' CPU in this process, with no budget in the way: what each
// handshake a source is allowed costs.
func BenchmarkHandshake(b *testing.B) {
	cfg := testConfig()
	cfg.Handshakes.Burst = 0 // no budget
	benchDial(b, cfg, true)
}

// BenchmarkHandshakeRefused is a connection attempt from a source that has
// spent its handshake budgets: refused at its first packet.
func BenchmarkHandshakeRefused(b *testing.B) {
	cfg := testConfig()
	cfg.Handshakes = transport.LimiterConfig{What: "handshakes", Burst: 1, Rate: 1e-9}
	benchDial(b, cfg, false)
}

func benchDial(b *testing.B, cfg transport.Config, wantOK bool) {
	srv := newEndpoint(b, cfg)
	serve(b, srv, whoami())
	cli := newEndpoint(b, testConfig())
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Addr().Port)
	dial := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := cli.DialAny(ctx, addr)
		if err == nil {
			c.Close()
		}
		return err
	}
	if !wantOK {
		dial() // the unproven budget
		dial() // the proven one, after a Retry
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := dial(); (err == nil) != wantOK {
			b.Fatalf("dial: %v; want success %v", err, wantOK)
		}
	}
}
