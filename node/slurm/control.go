package slurm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// owned checks that handle names a labpool job: a record of this
// executor, run by the record's account (see ours). It returns the job
// as the snapshot shows it (ok false when the snapshot lacks it).
func (e *Executor) owned(ctx context.Context, handle, verb string) (Job, bool, error) {
	if !validHandle(handle) {
		return Job{}, false, errHandle(handle)
	}
	snap, err := e.q.get(ctx, false)
	if err != nil {
		return Job{}, false, fmt.Errorf("%s slurm job %s: %w", verb, handle, err)
	}
	j, inQueue := snap.Jobs[handle]
	if e.removed(handle) {
		return Job{}, false, fmt.Errorf("%s slurm job %s: removed: %w", verb, handle, jobs.ErrTaskGone)
	}
	if e.record(handle) == nil {
		if inQueue {
			return Job{}, false, fmt.Errorf("slurm: %s job %s: it was not submitted by this agent (an executor touches only the jobs it recorded)", verb, handle)
		}
		return Job{}, false, fmt.Errorf("%s slurm job %s: %w", verb, handle, jobs.ErrTaskGone)
	}
	if inQueue && !e.ours(j) {
		return Job{}, false, fmt.Errorf("slurm: %s job %s: it runs as %s, not as the account it was submitted as (an executor touches only the jobs it recorded)", verb, handle, j.User)
	}
	return j, inQueue, nil
}

// Stop cancels the job with scancel: Slurm sends SIGTERM to the batch
// script and every step, and SIGKILL after the cluster's KillWait. When
// grace is shorter than that and the job still runs after it, Stop sends
// SIGKILL itself. (A SIGTERM of labpool's own, before scancel, would
// leave the job FAILED with code 143 in Slurm, not CANCELLED.)
func (e *Executor) Stop(ctx context.Context, handle string, grace time.Duration) error {
	j, inQueue, err := e.owned(ctx, handle, "stop")
	if err != nil {
		return err
	}
	if !inQueue || Ended(j.State) {
		return nil
	}
	if err := e.scancel(ctx, handle, handle); err != nil {
		return err
	}
	if grace <= 0 || j.State == "PENDING" || e.waitEnd(ctx, handle, grace) {
		return nil
	}
	return e.scancel(ctx, handle, "--full", "--signal=KILL", handle)
}

// scancel runs scancel as handle's account; a job that already ended is
// not an error.
func (e *Executor) scancel(ctx context.Context, handle string, args ...string) error {
	_, err := e.runAsJob(ctx, handle, "scancel", args...)
	e.q.invalidate()
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "already completing or completed") || strings.Contains(msg, "Invalid job id") {
			return nil
		}
		return fmt.Errorf("cancel slurm job %s: %w", args[len(args)-1], err)
	}
	return nil
}

// waitEnd reads the queue each tick until handle ends or grace passes.
func (e *Executor) waitEnd(ctx context.Context, handle string, grace time.Duration) bool {
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(e.cfg.Tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
		snap, err := e.q.get(ctx, false)
		if err != nil {
			continue
		}
		if j, ok := snap.Jobs[handle]; !ok || Ended(j.State) {
			return true
		}
	}
}

// Remove forgets an ended job: its output, its script and its record.
func (e *Executor) Remove(ctx context.Context, handle string) error {
	j, inQueue, err := e.owned(ctx, handle, "remove")
	if jobs.IsTaskGone(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if inQueue && !Ended(j.State) {
		return fmt.Errorf("slurm: remove job %s: it is %s, and only an ended job is removed (stop it first)", handle, strings.ToLower(j.State))
	}
	e.mu.Lock()
	r := e.recs[handle] // owned: there is one
	r.Removed = true
	e.recGen++
	cp := *r
	e.mu.Unlock()
	if err := e.forget(ctx, &cp, false); err != nil {
		return fmt.Errorf("remove slurm job %s: %w", handle, err)
	}
	if err := e.save(&cp); err != nil {
		return fmt.Errorf("remove slurm job %s: %w", handle, err)
	}
	return nil
}
