//go:build linux && cgo

package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestSinkMissesNoSample: a sink made before the telemetry runs reads the
// first sample and every one after, even when its Run starts late; Close
// unsubscribes it.
func TestSinkMissesNoSample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, _ := newTelemetry(t, 0)
		var got []time.Time
		sink := tel.Sink(func(ctx context.Context, samples <-chan Sample) error {
			for s := range samples {
				got = append(got, s.Time)
			}
			return nil
		})
		stop := start(t, tel)
		synctest.Wait() // the first sample is taken before the sink runs
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- sink.Run(ctx) }()
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		sink.Close() // the channel closes: Run returns
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		cancel()
		stop()
		if len(got) != 3 || !got[0].Equal(got[1].Add(-time.Second)) {
			t.Errorf("read samples taken at %v; want 3, a second apart, from the first", got)
		}
	})
}
