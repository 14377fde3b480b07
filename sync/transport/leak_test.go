package transport_test

import (
	"runtime"
	"testing"
	"time"
)

// TestNoLeakedGoroutines: once Serve has returned and both endpoints are
// closed, every goroutine they started is gone.
func TestNoLeakedGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv, cli := newEndpoint(t, testConfig()), newEndpoint(t, testConfig())
		stop := serve(t, srv, whoami())
		get(t, cli.Client(srv.ID(), []string{srv.Addr().String()}), "https://peer/v1/whoami")
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		cli.Close()
		srv.Close()
	}()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
