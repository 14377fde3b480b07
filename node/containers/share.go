package containers

import (
	"context"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/mps"
)

// Sharer serves GPU shares with MPS (*mps.Daemons): a share's client
// arrangement from its GPU's control daemon, and its end.
type Sharer interface {
	Acquire(ctx context.Context, gpu, holder string, share float64, memBytes uint64) (mps.Client, error)
	Adopt(ctx context.Context, holder string, c mps.Client) error
	Release(ctx context.Context, gpu, holder string) error
	Sweep(ctx context.Context) error
	// Owner is who owns the daemons' pipe and shm directories, "uid:gid"
	// ("" for the agent's own): the only user whose clients reach them.
	Owner() string
}

var _ Sharer = (*mps.Daemons)(nil)

// Labels of a container with an MPS share: the GPU whose daemon it
// reaches (released when the container ends), and its static SM
// partition, if any (removed then).
const (
	LabelMPSGPU       = "labpool.mps-gpu"
	LabelMPSPartition = "labpool.mps-partition"
)

// shares says whether this executor caps GPU shares with MPS: where it
// has a Sharer, on real GPUs.
func (e *Executor) shares() bool { return e.cfg.MPS != nil && !e.cfg.SimulatedGPUs }

// arrangeShare gives l, the container of t, its GPU's MPS daemon, where t
// holds a share and this executor runs MPS: the daemon's pipe directory at
// its own path and its shm directory as the container's /dev/shm (no
// host IPC namespace: the container keeps its private one), and the
// variables that carry the share's threads and memory cap. Without MPS a
// share is time-sliced: nothing to arrange.
func (e *Executor) arrangeShare(ctx context.Context, t jobs.Task, l *Launch) error {
	if t.GPUShare <= 0 || !e.shares() {
		return nil
	}
	if len(t.GPUs) != 1 {
		return fmt.Errorf("start job %s: a GPU share is of one GPU; %d granted", t.ID, len(t.GPUs))
	}
	// A client whose user cannot open the daemon's directories would run
	// without MPS, capped by nothing: refused instead.
	user, err := e.rt.user(*l)
	if err != nil {
		return err
	}
	if e.rt.remap || user != e.cfg.MPS.Owner() {
		return fmt.Errorf("start job %s on a GPU share: its processes would run as %q, and MPS serves this machine's shares to %q only (the jobs' user); run it as that user, or ask for a whole GPU", t.ID, user, e.cfg.MPS.Owner())
	}
	c, err := e.cfg.MPS.Acquire(ctx, t.GPUs[0], t.ID, t.GPUShare, t.GPUMemBytes)
	if err != nil {
		return fmt.Errorf("start job %s on a share of %s: %w", t.ID, t.GPUs[0], err)
	}
	l.Binds = append(l.Binds, Bind{HostPath: c.PipeDir, Target: c.PipeDir}, Bind{HostPath: c.ShmDir, Target: mps.ShmTarget})
	l.ShmBytes = 0 // /dev/shm is the daemon's
	l.Env = append(l.Env, c.Env()...)
	l.Labels[LabelMPSGPU] = c.GPU
	if c.Partition != "" {
		l.Labels[LabelMPSPartition] = c.Partition
	}
	return nil
}

// releaseShare ends the MPS share of the container labelled labels, if it
// holds one. It is called for every container that ended; releasing twice
// is nothing.
func (e *Executor) releaseShare(labels map[string]string) {
	gpu, job := labels[LabelMPSGPU], labels[LabelJob]
	if gpu == "" || job == "" || e.cfg.MPS == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.cfg.MPS.Release(ctx, gpu, job); err != nil {
		e.rt.log.Warn("end a job's MPS share", "job", job, "gpu", gpu, "err", err)
	}
}

// adoptShare takes back, after the agent restarted, the share of a
// running container that holds one: its GPU's daemon, which outlived the
// agent as the container did, keeps serving it.
func (e *Executor) adoptShare(ctx context.Context, c Container) {
	gpu, job := c.Labels[LabelMPSGPU], c.Labels[LabelJob]
	if gpu == "" || job == "" || e.cfg.MPS == nil {
		return
	}
	if err := e.cfg.MPS.Adopt(ctx, job, mps.Client{GPU: gpu, Partition: c.Labels[LabelMPSPartition]}); err != nil {
		e.rt.log.Warn("take back a running job's MPS share", "job", job, "gpu", gpu, "err", err)
	}
}
