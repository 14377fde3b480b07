package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// Consume hands over every sample in order, ticks on its period, and
// returns when the channel closes or ctx ends.
func TestConsume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ch := make(chan Sample)
		var got []int
		var ticks int
		done := make(chan struct{})
		go func() {
			defer close(done)
			Consume(context.Background(), ch, time.Minute, func(s Sample) { got = append(got, len(s.GPUs)) },
				func(time.Time) { ticks++ })
		}()
		ch <- Sample{}
		time.Sleep(150 * time.Second)
		synctest.Wait()
		ch <- Sample{GPUs: make([]gpu.Stats, 1)}
		close(ch)
		<-done
		if len(got) != 2 || got[0] != 0 || got[1] != 1 || ticks != 2 {
			t.Errorf("samples %v, ticks %d; want [0 1] and 2", got, ticks)
		}

		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan struct{})
		go func() { Consume(ctx, make(chan Sample), 0, func(Sample) {}, nil); close(ended) }()
		cancel()
		<-ended
	})
}
