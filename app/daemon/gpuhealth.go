package daemon

import (
	"context"
	"time"

	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/node/alloc"
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
// job manager quarantines faulty GPUs and names in held the jobs and
// owners; then the Slurm jobs on a compute node's GPUs (slurmprocs.go).
func (d *Daemon) annotateGPUs(taken time.Time, gs []gpu.Stats, held *alloc.Holding) {
	if d.jobs != nil {
		d.jobs.AnnotateGPUs(taken, gs, held)
	}
	d.annotateSlurm(taken, gs, held)
}
