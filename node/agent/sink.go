package agent

import "context"

// Sink is a reader of the telemetry's samples (a recorder, the alerts'
// evaluator) as a daemon's part: subscribed when made, so that it misses
// none from the first sample, and unsubscribed by Close.
type Sink struct {
	samples <-chan Sample
	cancel  func()
	run     func(ctx context.Context, samples <-chan Sample) error
}

// Sink subscribes run, which reads samples until ctx is cancelled.
func (t *Telemetry) Sink(run func(ctx context.Context, samples <-chan Sample) error) *Sink {
	samples, cancel := t.Subscribe()
	return &Sink{samples: samples, cancel: cancel, run: run}
}

// Run runs the reader until ctx is cancelled.
func (s *Sink) Run(ctx context.Context) error { return s.run(ctx, s.samples) }

// Close unsubscribes the reader.
func (s *Sink) Close() error {
	s.cancel()
	return nil
}
