package daemon

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/internal/leaktest"
)

// closer is a part that notes when it is closed.
type closer struct {
	name   string
	closed *[]string
}

func (c closer) Close() error {
	*c.closed = append(*c.closed, c.name)
	return nil
}

// TestCloseInReverse: the parts are closed in the reverse of the list's
// order, each once, those without Close passed over.
func TestCloseInReverse(t *testing.T) {
	var closed []string
	d := &Daemon{}
	d.add(closer{"lock", &closed})
	d.add(closer{"store", &closed})
	d.add(runFunc(func(context.Context) error { return nil }))
	d.add(closer{"endpoint", &closed})
	d.add(closer{"jobs", &closed})
	d.close()
	d.close()
	if want := []string{"jobs", "endpoint", "store", "lock"}; !slices.Equal(closed, want) {
		t.Errorf("closed %v; want %v", closed, want)
	}
}

// TestRunStopsEveryPart: a whole daemon serves its local API once ready,
// and when ctx is cancelled Run returns with every goroutine of its parts
// gone and the data directory free for the next daemon.
func TestRunStopsEveryPart(t *testing.T) {
	before := leaktest.Count()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.Name, cfg.QUICOnly = t.TempDir(), "127.0.0.1:0", "solo", true
	cfg.Ifaces = []string{"lo"} // no multicast: discovery says so and rests
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, cfg, log, func(*Daemon) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("run: %v", err)
	}
	self, err := web.NewClient(Socket(cfg.DataDir)).Self(t.Context())
	if err != nil || self.Name != "solo" {
		t.Fatalf("self = %+v, %v; want the daemon named solo", self, err)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run returned %v", err)
	}
	leaktest.Check(t, before, 10*time.Second)
	d, err := open(t.Context(), cfg, log)
	if err != nil {
		t.Fatalf("open the data directory again: %v", err)
	}
	d.close()
}
