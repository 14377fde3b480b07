package daemon

import (
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// slurmProcs is what this machine knows of the Slurm jobs on its GPUs,
// where it is a Slurm compute node (elsewhere no process is in one, and it
// costs one read of /proc/PID/stat per GPU process and sample).
type slurmProcs struct {
	procs *slurm.Procs
	jobs  *app.SlurmJobs
	idle  slurm.IdleWatch // owned by the sampling loop (the Annotate hook)
}

// procRoot is where the host's processes are read.
const procRoot = "/proc"

func (d *Daemon) openSlurmProcs() {
	d.slurm = &slurmProcs{procs: slurm.NewProcs(procRoot, slurm.ConfCluster(slurm.ConfPaths)), jobs: app.NewSlurmJobs(d.db)}
}

// annotateSlurm names the Slurm jobs of one GPU sample's processes and
// GPUs (after the job manager named its own), and warns of a Slurm job
// idle past the idle reclaim policy: a compute node never stops one.
func (d *Daemon) annotateSlurm(taken time.Time, gs []gpu.Stats) {
	s := d.slurm
	if s == nil {
		return
	}
	s.procs.Annotate(gs, s.jobs.Find)
	if d.jobs == nil {
		return
	}
	p := d.jobs.Policy()
	for _, w := range s.idle.Observe(taken, gs, time.Duration(p.IdleReclaimSeconds)*time.Second, p.IdleBelowPercent) {
		d.log.Warn("idle reclaim policy: a Slurm job's GPUs are idle; not stopped: a compute node does not stop Slurm jobs, its cluster does",
			"holder", w.Holder, "job", w.Job, "owner", w.Owner, "gpus", w.GPUs, "idle_since", w.Since)
	}
}

// jobOf is the record of job id for names people read: this machine's
// job, or a Slurm job that holds its GPUs through a cluster's agent.
func (d *Daemon) jobOf(id string) (jobs.Job, error) {
	j, err := d.jobs.Get(id)
	if err == nil || d.slurm == nil {
		return j, err
	}
	if sj, ok := d.slurm.jobs.Job(id); ok {
		return sj, nil
	}
	return jobs.Job{}, err
}
