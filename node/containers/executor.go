package containers

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// Executor runs the job manager's tasks as containers of a Runtime: it
// implements jobs.Executor, and jobs.Validator with the rules of this
// package (ValidateSpec), and jobs.Pruner (the networks of containers gone
// while the agent was away).
type Executor struct {
	rt  *Runtime
	cfg ExecutorConfig

	mu      sync.Mutex      // guards stopped
	stopped map[string]bool // containers this executor was asked to stop: they end "cancelled"
	swept   sync.Once       // the MPS daemons no adopted job uses, stopped after the first List
}

// ExecutorConfig tunes the executor.
type ExecutorConfig struct {
	// SimulatedGPUs marks the GPUs as simulated (no NVIDIA runtime): grants
	// reach the container as NVIDIA_VISIBLE_DEVICES only, with no device
	// request, so demos and tests run on machines without a GPU.
	SimulatedGPUs bool
	// MPS, when set, caps GPU shares with MPS control daemons (node/mps);
	// nil, or simulated GPUs: shares are time-sliced and uncapped.
	MPS Sharer
}

var (
	_ jobs.Executor  = (*Executor)(nil)
	_ jobs.Validator = (*Executor)(nil)
	_ jobs.Pruner    = (*Executor)(nil)
)

// NewExecutor returns the executor over rt.
func NewExecutor(rt *Runtime, cfg ExecutorConfig) *Executor {
	return &Executor{rt: rt, cfg: cfg, stopped: map[string]bool{}}
}

// Capabilities implements jobs.Executor: Docker images, on this machine's
// GPUs (the manager's ledger grants them), restarts on failure.
func (e *Executor) Capabilities() jobs.Capabilities {
	return jobs.Capabilities{Name: "docker", Images: []string{"docker"}, RemapsUsers: e.rt.RemapsUsers(), Restart: true, MPS: e.shares()}
}

// ValidateTask implements jobs.Validator: the container options' rules.
func (e *Executor) ValidateTask(s jobs.Spec) error { return ValidateSpec(s) }

// Prune implements jobs.Pruner: it removes the job networks no container
// uses any more.
func (e *Executor) Prune(ctx context.Context) error { return e.rt.PruneNetworks(ctx) }

// Start implements jobs.Executor: it creates and starts t's container; a
// start that fails leaves no container.
func (e *Executor) Start(ctx context.Context, t jobs.Task) (jobs.TaskStatus, error) {
	l := e.launch(t)
	if err := e.arrangeShare(ctx, t, &l); err != nil {
		return jobs.TaskStatus{}, err
	}
	c, err := e.rt.Run(ctx, l)
	if err != nil {
		e.releaseShare(l.Labels)
		return jobs.TaskStatus{}, err
	}
	return e.status(c), nil
}

// launch is the container t runs in.
func (e *Executor) launch(t jobs.Task) Launch {
	binds := make([]Bind, 0, len(t.Mounts))
	for _, m := range t.Mounts {
		binds = append(binds, Bind{HostPath: m.HostPath, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	l := Launch{
		Name: "labpool-" + t.Name + "-" + t.ID[:min(6, len(t.ID))], Image: t.Image, Cmd: t.Cmd, GPUs: t.GPUs,
		CPUs: t.Resources.CPUs, MemoryBytes: t.Resources.MemoryBytes, ShmBytes: t.Container.ShmBytes, Binds: binds,
		Ports: t.Ports, Restart: t.Container.Restart, Network: t.Container.Network, Labels: maps.Clone(t.Labels),
		User: t.Container.User, AllowRoot: t.Container.AllowRoot, LogMaxBytes: t.Container.LogMaxBytes,
	}
	// The NVIDIA runtime (the default runtime on many GPU servers) reads
	// NVIDIA_VISIBLE_DEVICES, which CUDA images set to "all": pin it to the
	// grant, "void" when none.
	visible := "void"
	if len(t.GPUs) > 0 {
		visible = strings.Join(t.GPUs, ",")
	}
	l.Env = append(slices.Clone(t.Env), "NVIDIA_VISIBLE_DEVICES="+visible)
	if e.cfg.SimulatedGPUs {
		l.GPUs = nil
	}
	return l
}

// Stop implements jobs.Executor: SIGTERM, then SIGKILL after grace. The
// container then reads as cancelled.
func (e *Executor) Stop(ctx context.Context, handle string, grace time.Duration) error {
	e.mu.Lock()
	e.stopped[handle] = true
	e.mu.Unlock()
	if err := e.rt.Stop(ctx, handle, grace); err != nil {
		return gone(err)
	}
	e.releaseEnded(ctx, handle)
	return nil
}

// releaseEnded ends the MPS share of the container handle, if it ended
// and held one.
func (e *Executor) releaseEnded(ctx context.Context, handle string) {
	if e.cfg.MPS == nil {
		return
	}
	if c, err := e.rt.Inspect(ctx, handle); err == nil {
		e.status(c)
	}
}

// Remove implements jobs.Executor: it removes the container (killing it
// if it runs) and its network; one already gone is no error.
func (e *Executor) Remove(ctx context.Context, handle string) error {
	if e.cfg.MPS != nil {
		if c, err := e.rt.Inspect(ctx, handle); err == nil {
			defer e.releaseShare(c.Labels)
		}
	}
	err := e.rt.Remove(ctx, handle)
	if IsGone(err) {
		err = nil
	}
	if err == nil {
		e.mu.Lock()
		delete(e.stopped, handle)
		e.mu.Unlock()
	}
	return err
}

// Inspect implements jobs.Executor.
func (e *Executor) Inspect(ctx context.Context, handle string) (jobs.TaskStatus, error) {
	c, err := e.rt.Inspect(ctx, handle)
	if err != nil {
		return jobs.TaskStatus{}, gone(err)
	}
	return e.status(c), nil
}

// List implements jobs.Executor: one list of the engine's labpool
// containers of this node.
func (e *Executor) List(ctx context.Context) ([]jobs.TaskStatus, error) {
	cs, err := e.rt.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]jobs.TaskStatus, 0, len(cs))
	for _, c := range cs {
		if c.Running || c.State == "restarting" {
			e.adoptShare(ctx, c)
		}
		out = append(out, e.status(c))
	}
	if e.cfg.MPS != nil {
		e.swept.Do(func() { // the first list adopts: the daemons left over go
			if err := e.cfg.MPS.Sweep(ctx); err != nil {
				e.rt.log.Warn("stop the MPS daemons no job uses", "err", err)
			}
		})
	}
	return out, nil
}

// Events implements jobs.Executor over the engine's container events.
func (e *Executor) Events(ctx context.Context) (<-chan jobs.TaskEvent, <-chan error) {
	evs, errs := e.rt.Events(ctx)
	out := make(chan jobs.TaskEvent, 64)
	go func() {
		defer close(out)
		for ev := range evs {
			te := jobs.TaskEvent{Handle: ev.ID, JobID: ev.Labels[LabelJob], Action: ev.Action, Time: ev.Time}
			select {
			case out <- te:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, errs
}

// Logs implements jobs.Executor; tail <= 0 reads every line.
func (e *Executor) Logs(ctx context.Context, handle string, follow bool, tail int) (io.ReadCloser, error) {
	if tail <= 0 {
		tail = -1
	}
	rc, err := e.rt.Logs(ctx, handle, follow, tail)
	return rc, gone(err)
}

// Stats implements jobs.Executor.
func (e *Executor) Stats(ctx context.Context, handle string) (jobs.TaskUsage, error) {
	u, err := e.rt.Stats(ctx, handle)
	if err != nil {
		return jobs.TaskUsage{}, gone(err)
	}
	return jobs.TaskUsage{CPUPercent: u.CPUPercent, MemUsedBytes: u.MemUsedBytes, MemLimitBytes: u.MemLimitBytes, PIDs: u.PIDs}, nil
}

// gone marks the engine's not-found error as jobs.ErrTaskGone.
func gone(err error) error {
	if err != nil && IsGone(err) {
		return fmt.Errorf("%w: %w", jobs.ErrTaskGone, err)
	}
	return err
}

// status is what the manager reads of container c.
func (e *Executor) status(c Container) jobs.TaskStatus {
	st := jobs.TaskStatus{Handle: c.ID, JobID: c.Labels[LabelJob], Labels: c.Labels, Image: c.Image, ImageLoadedBy: e.loadedBy(c),
		ExitCode: c.ExitCode, Started: c.Started, Finished: c.Finished, OOM: c.OOMKilled, Addr: c.Addr, Ports: c.Ports,
		Restarts: c.Restarts}
	e.mu.Lock()
	stopped := e.stopped[c.ID]
	e.mu.Unlock()
	switch {
	case c.Running || c.State == "restarting":
		st.State = jobs.TaskRunning
	case c.State == "created":
		st.State, st.Reason = jobs.TaskPending, "created, not started"
	case c.OOMKilled:
		st.State = jobs.TaskFailed
	case c.Error != "":
		st.State, st.Reason = jobs.TaskFailed, c.Error
	case stopped:
		st.State = jobs.TaskCancelled
	case c.State == "dead":
		st.State, st.Reason = jobs.TaskFailed, "the engine marked its container dead"
	default:
		st.State = jobs.TaskExited
	}
	if st.State == jobs.TaskRunning {
		st.Finished = time.Time{}
	}
	if st.State.Ended() {
		e.releaseShare(c.Labels) // a container restarting keeps its share
	}
	return st
}

// loadedBy is who loaded c's image, when that is neither who launched c
// nor this machine's own user: a launch of a name that resolves to an
// image a member brought says so.
func (e *Executor) loadedBy(c Container) string {
	if by := c.ImageLoadedBy; by != c.Labels[LabelOwner] && by != e.rt.cfg.Node {
		return by
	}
	return ""
}
