//go:build linux && cgo

package agent

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// TestAnnotate: Config.Annotate completes each GPU reading before it is
// published, with the time the sample began; a machine without GPUs is not
// annotated.
func TestAnnotate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lib := gputest.NewLibrary(2)
		g, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		cfg := DefaultConfig()
		var taken []time.Time
		cfg.Annotate = func(at time.Time, gs []gpu.Stats, held *alloc.Holding) {
			taken = append(taken, at)
			gs[1].Health = gpu.HealthQuarantined
			held.HoldGPU(gs[1].UUID, alloc.Holder{Kind: alloc.Job, ID: "job-1"})
		}
		tel := New(cfg, g, &fakeHost{}, discard())
		stop := start(t, tel)
		time.Sleep(10 * time.Millisecond)
		stop()
		s, ok := tel.Latest()
		if !ok || len(taken) == 0 || !s.Time.Equal(taken[len(taken)-1]) {
			t.Fatalf("Annotate called at %v; latest sample at %v (%v)", taken, s.Time, ok)
		}
		if s.Holding.GPU(s.GPUs[1].UUID).JobID() != "job-1" || s.GPUs[1].Health != gpu.HealthQuarantined || s.Holding.GPU(s.GPUs[0].UUID).Held() {
			t.Errorf("published GPUs: %+v, held %+v", s.GPUs, s.Holding)
		}

		cfg.Annotate = func(time.Time, []gpu.Stats, *alloc.Holding) { t.Error("Annotate called without GPUs") }
		tel = New(cfg, nil, &fakeHost{}, discard())
		stop = start(t, tel)
		time.Sleep(10 * time.Millisecond)
		stop()
	})
}
