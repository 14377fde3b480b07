package daemon

import (
	"context"
	"time"

	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// openHealth reads the quarantines back into the job manager's ledger and
// hands NVML the faults owners accepted.
func (d *Daemon) openHealth(ctx context.Context) {
	var clearer jobs.FaultClearer // a nil interface without NVML
	if d.gpus != nil {
		clearer = d.gpus
	}
	if err := d.jobs.OpenHealth(ctx, nodestore.NewHealth(d.db), clearer); err != nil {
		d.log.Error("GPU quarantines not read: none applies until the next restart", "err", err)
	}
}

// annotateGPUs completes each GPU sample (Telemetry's Annotate hook): the
// job manager quarantines faulty GPUs and names jobs and owners; then the
// Slurm jobs on a compute node's GPUs are named (slurmprocs.go).
func (d *Daemon) annotateGPUs(taken time.Time, gs []gpu.Stats) {
	if d.jobs != nil {
		d.jobs.AnnotateGPUs(taken, gs)
	}
	d.slurm.Annotate(taken, gs)
}

// jobPolicy is this machine's policy, applied by the job manager.
func (d *Daemon) jobPolicy() jobs.Policy {
	if d.jobs == nil {
		return jobs.Policy{}
	}
	return d.jobs.Policy()
}

// jobOf is the record of job id for names people read: this machine's
// job, or a Slurm job that holds its GPUs through a cluster's agent.
func (d *Daemon) jobOf(id string) (jobs.Job, error) {
	j, err := d.jobs.Get(id)
	if err == nil {
		return j, err
	}
	if sj, ok := d.slurm.Job(id); ok {
		return sj, nil
	}
	return jobs.Job{}, err
}
