package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// stoppedByUser is the Error of a job a user stopped: its non-zero exit
// (SIGTERM, SIGKILL) is not a failure.
const stoppedByUser = "stopped"

// evicted is the Error of a job whose owner was removed from the pool.
const evicted = "owner removed from the pool"

// stoppedOnPurpose says whether a job's Error records a stop by a user or
// an eviction: its non-zero exit is no failure.
func stoppedOnPurpose(why string) bool {
	return why == stoppedByUser || why == evicted || reclaimed(why) || strings.HasSuffix(why, reservedSuffix) || lentOut(why)
}

// Stop stops a running job, or takes a queued one out of the queue (a job
// queued by a backend that schedules is cancelled there). A job that
// already ended is returned as it is.
func (m *Manager) Stop(ctx context.Context, id string) (Job, error) {
	now := time.Now().UTC()
	j, err := m.update(id, func(j *Job) error {
		switch {
		case j.State == Queued && j.OfferedTo != "":
			return fmt.Errorf("%w: job %s is being handed over to %s; stop it there once it shows, or try again in a moment", ErrConflict, j.Name, short(j.OfferedTo))
		case j.State == Queued && j.Container == "": // in this manager's own queue
			j.State, j.Finished, j.Error = Exited, &now, "stopped while queued"
		case j.State == Starting && j.Container == "":
			// Launching from the queue: startClaimed sees this, removes
			// the new container and frees the GPUs.
			j.State, j.Finished, j.Error = Exited, &now, "stopped while starting"
		case j.State == Running || j.State == Starting || j.State == Queued: // queued: by a backend that schedules
			j.Error = stoppedByUser
		}
		return nil
	})
	if err != nil || j.Error != stoppedByUser || j.Finished != nil {
		return j, err
	}
	if err := m.ex.Stop(ctx, j.Container, m.cfg.StopTimeout); err != nil && !isGone(err) {
		return Job{}, fmt.Errorf("stop %s: %w", j.Name, err)
	}
	if err := m.refresh(ctx, id, stoppedByUser); err != nil {
		return Job{}, fmt.Errorf("stop %s: %w", j.Name, err)
	}
	return m.Get(id)
}

// ErrRunning means a remove was refused because the job still runs and the
// caller did not force it: removing a running job kills its work.
var ErrRunning = errors.New("a running job is removed only with force")

// Remove removes a job's container. A running (or starting) job is refused
// with ErrRunning unless force; then, like a queued one, it is stopped
// first. The record stays, marked Removed, so the history keeps it.
func (m *Manager) Remove(ctx context.Context, id string, force bool) error {
	j, err := m.Get(id)
	if err != nil {
		return err
	}
	if (j.State == Starting || j.State == Running) && !force {
		return fmt.Errorf("remove %s: %w: it is %s; stop it first, or remove it with --force (its work is lost)", j.Name, ErrRunning, j.State)
	}
	if j.State == Queued || j.State == Starting || j.State == Running {
		if j, err = m.Stop(ctx, id); err != nil {
			return err
		}
		if j.State == Starting || j.State == Running {
			return fmt.Errorf("remove %s: %w: it is still %s", j.Name, ErrConflict, j.State)
		}
	}
	if j.Container != "" {
		if err := m.ex.Remove(ctx, j.Container); err != nil && !isGone(err) {
			return fmt.Errorf("remove %s: %w", j.Name, err)
		}
	}
	_, err = m.update(id, func(j *Job) error {
		j.Removed, j.Container, j.Ports, j.Spec.Env = true, "", nil, nil
		return nil
	})
	if err == nil {
		if derr := m.store.SavePrivate(id, Private{}); derr != nil {
			m.log.Warn("drop a removed job's environment and command line", "job", id, "err", derr)
		}
	}
	return err
}

// Logs streams a job's output (stdout and stderr); follow keeps the stream
// open until the job ends or ctx is cancelled; tail < 0 means all lines.
func (m *Manager) Logs(ctx context.Context, id string, follow bool, tail int) (io.ReadCloser, error) {
	j, err := m.Get(id)
	if err != nil {
		return nil, err
	}
	if j.Container == "" {
		return nil, fmt.Errorf("logs of %s: %w: it has no container (it is %s%s)", j.Name, ErrConflict, j.State, removedNote(j))
	}
	rc, err := m.ex.Logs(ctx, j.Container, follow, tail)
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", j.Name, err)
	}
	return rc, nil
}

func removedNote(j Job) string {
	if j.Removed {
		return ", removed"
	}
	return ""
}

// Stats returns what a running job uses: its container's CPU and memory,
// and on each of its GPUs the memory of its own processes (NVML's process
// PIDs that are the container's). A job holds its GPUs alone, so a GPU's
// utilization is the job's. A job of an executor that places it elsewhere
// (a Slurm job) shows the GPUs its hosts report (Config.RemoteGPUs).
func (m *Manager) Stats(ctx context.Context, id string) (Stats, error) {
	j, err := m.Get(id)
	if err != nil {
		return Stats{}, err
	}
	if j.State != Running {
		return Stats{}, fmt.Errorf("stats of %s: %w: it is %s, not running", j.Name, ErrConflict, j.State)
	}
	u, err := m.ex.Stats(ctx, j.Container)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of %s: %w", j.Name, err)
	}
	st := Stats{CPUPercent: u.CPUPercent, MemUsedBytes: u.MemUsedBytes, MemLimitBytes: u.MemLimitBytes, GPUs: []GPUStats{}}
	for _, g := range m.gpus.GPUs() {
		if !slices.Contains(j.GPUs, g.UUID) {
			continue
		}
		gs := GPUStats{UUID: g.UUID, Index: g.Index, UtilPercent: g.UtilPercent, Processes: []gpu.Process{}}
		for _, p := range g.Processes {
			if slices.Contains(u.PIDs, int(p.PID)) || inContainer(containerOfPID(p.PID), j.Container) {
				gs.MemUsedBytes += p.MemBytes
				gs.Processes = append(gs.Processes, p)
			}
		}
		st.GPUs = append(st.GPUs, gs)
	}
	if len(j.GPUs) == 0 && m.cfg.RemoteGPUs != nil && m.caps().Schedules {
		st.GPUs = append(st.GPUs, m.cfg.RemoteGPUs(ctx, j)...)
	}
	return st, nil
}
