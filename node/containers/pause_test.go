package containers

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"
)

// pausingDocker is a fakeDocker whose pause the container obeys or not.
type pausingDocker struct {
	fakeDocker
	obeys  bool
	paused bool
}

func (f *pausingDocker) ContainerPause(context.Context, string) error {
	f.calls = append(f.calls, "pause")
	f.paused = f.obeys
	return nil
}

func (f *pausingDocker) ContainerUnpause(context.Context, string) error {
	f.calls = append(f.calls, "unpause")
	f.paused = false
	return nil
}

func (f *pausingDocker) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	ins, err := f.fakeDocker.ContainerInspect(ctx, id)
	ins.State = &container.State{Running: true, Paused: f.paused}
	return ins, err
}

// TestPause: a container that pauses is paused and unpaused; one that
// runs on after its pause (an engine that accepted it and froze nothing)
// is told ErrNotPaused, so the lender stops it.
func TestPause(t *testing.T) {
	ctx := context.Background()
	labels := map[string]string{LabelManaged: "true"}
	f := &pausingDocker{fakeDocker: fakeDocker{labels: labels}, obeys: true}
	r := fakeRuntime(DefaultConfig(), &f.fakeDocker)
	r.api = f
	if err := r.Pause(ctx, "c1"); err != nil || !f.paused {
		t.Fatalf("Pause = %v, paused %v", err, f.paused)
	}
	if err := r.Unpause(ctx, "c1"); err != nil || f.paused || !slices.Contains(f.calls, "unpause") {
		t.Fatalf("Unpause = %v, paused %v, calls %v", err, f.paused, f.calls)
	}
	f.obeys = false
	if err := r.Pause(ctx, "c1"); !errors.Is(err, ErrNotPaused) {
		t.Errorf("Pause of a container that runs on = %v; want ErrNotPaused", err)
	}
	f.labels = nil // not labpool's
	if err := r.Pause(ctx, "c1"); !errors.Is(err, ErrNotManaged) {
		t.Errorf("Pause of a container not labpool's = %v; want ErrNotManaged", err)
	}
}
