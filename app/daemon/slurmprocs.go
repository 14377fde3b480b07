package daemon

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/alloc"
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
	// Owned by the sampling loop (the Annotate hook).
	idle   slurm.IdleWatch
	holds  app.SlurmHolds // what they held, for the usage report
	pruned time.Time      // when old holds were last pruned
}

// slurmHoldKeep is how long the holds are kept: as far back as a report
// reads.
const slurmHoldKeep = history.MaxSeriesWindow + 24*time.Hour

// procRoot is where the host's processes are read.
const procRoot = "/proc"

// openSlurmProcs prepares the Slurm view and takes back the holds an
// earlier run left open.
func (d *Daemon) openSlurmProcs(ctx context.Context) {
	d.slurm = &slurmProcs{procs: slurm.NewProcs(procRoot, slurm.ConfCluster(slurm.ConfPathsWith(os.Getenv("SLURM_CONF")))), jobs: app.NewSlurmJobs(d.db)}
	recs, err := d.db.Range(ctx, d.id.ID.String(), app.KindSlurmHold, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		d.log.Warn("read the Slurm jobs this machine saw: those left open end at its next sample", "err", err)
		return
	}
	var open []app.SlurmHold
	for _, rec := range recs {
		var h app.SlurmHold
		if json.Unmarshal(rec.Data, &h) == nil && h.End == nil {
			open = append(open, h)
		}
	}
	d.slurm.holds.Adopt(open)
}

// annotateSlurm names in held the Slurm jobs of one GPU sample's
// processes and GPUs (after the job manager named its own), and warns of
// a Slurm job idle past the idle reclaim policy: a compute node never
// stops one.
func (d *Daemon) annotateSlurm(taken time.Time, gs []gpu.Stats, held *alloc.Holding) {
	s := d.slurm
	if s == nil {
		return
	}
	s.procs.Annotate(gs, held, s.jobs.Find)
	for _, h := range s.holds.Observe(taken, gs, *held) {
		d.saveHold(taken, h)
	}
	if taken.Sub(s.pruned) >= time.Hour {
		s.pruned = taken
		if _, err := d.db.Prune(context.Background(), app.KindSlurmHold, taken.Add(-slurmHoldKeep)); err != nil {
			d.log.Warn("prune the Slurm jobs' holds", "err", err)
		}
	}
	if d.jobs == nil {
		return
	}
	p := d.jobs.Policy()
	for _, w := range s.idle.Observe(taken, gs, *held, time.Duration(p.IdleReclaimSeconds)*time.Second, p.IdleBelowPercent) {
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

// saveHold records what a Slurm job held here (app.KindSlurmHold).
func (d *Daemon) saveHold(at time.Time, h app.SlurmHold) {
	data, err := json.Marshal(h)
	if err == nil {
		_, err = d.db.Append(context.Background(), d.id.ID.String(), app.KindSlurmHold, h.Key(), at, data)
	}
	if err != nil {
		d.log.Warn("record a Slurm job's GPUs: the usage report misses it", "holder", h.Holder, "err", err)
	}
}
