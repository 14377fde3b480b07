package transport_test

import (
	"testing"
	"time"

	"github.com/labpool/labpool/internal/leaktest"
)

// TestNoLeakedGoroutines: once Serve has returned and both endpoints are
// closed, every goroutine they started is gone.
func TestNoLeakedGoroutines(t *testing.T) {
	before := leaktest.Count()
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
	leaktest.Check(t, before, 3*time.Second)
}
