package containers

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotPaused means a container asked to pause runs on: the engine
// accepted the pause, and its state does not say paused.
var ErrNotPaused = errors.New("the container runs on after its pause")

// Pause freezes a container's processes (docker pause: the cgroup
// freezer): they stop using the CPU and the GPU, their memory stays. It
// returns ErrNotPaused unless the engine then reads it paused.
func (r *Runtime) Pause(ctx context.Context, id string) error {
	if _, err := r.managed(ctx, id); err != nil {
		return err
	}
	pctx, cancel := r.bounded(ctx)
	defer cancel()
	if err := r.api.ContainerPause(pctx, id); err != nil {
		return fmt.Errorf("pause container %s: %w", shortID(id), explain(err, ""))
	}
	ins, err := r.managed(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("pause container %s: %w", shortID(id), err)
	case ins.State == nil || !ins.State.Paused:
		return fmt.Errorf("pause container %s: %w", shortID(id), ErrNotPaused)
	}
	return nil
}

// Unpause resumes a container Pause froze; one that is not paused is no
// error.
func (r *Runtime) Unpause(ctx context.Context, id string) error {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return err
	}
	if ins.State != nil && !ins.State.Paused {
		return nil
	}
	uctx, cancel := r.bounded(ctx)
	defer cancel()
	if err := r.api.ContainerUnpause(uctx, id); err != nil {
		return fmt.Errorf("unpause container %s: %w", shortID(id), explain(err, ""))
	}
	return nil
}

// Pause implements jobs.Pauser.
func (e *Executor) Pause(ctx context.Context, handle string) error {
	return gone(e.rt.Pause(ctx, handle))
}

// Unpause implements jobs.Pauser.
func (e *Executor) Unpause(ctx context.Context, handle string) error {
	return gone(e.rt.Unpause(ctx, handle))
}
