package daemon

import (
	"errors"
	"github.com/labpool/labpool/app"
	"log/slog"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
)

// openGPUs opens this machine's GPUs: NVML, or Config.SimulateGPUs
// simulated ones. nil: no driver, or NVML would not open (said in the log).
func openGPUs(cfg Config, self peer.ID, log *slog.Logger) *gpu.Sampler {
	g, err := gpu.Open(gpu.DefaultConfig())
	if cfg.SimulateGPUs > 0 {
		log.Warn("simulating GPUs instead of reading NVML", "gpus", cfg.SimulateGPUs)
		g, err = gpu.OpenSimulated(cfg.SimulateGPUs, self.String(), gpu.DefaultConfig())
	}
	switch {
	case err == nil:
		return g
	case errors.Is(err, gpu.ErrNoDriver):
		log.Info("monitoring the host only", "gpus", err.Error())
	default:
		log.Warn("open nvml", "err", err)
	}
	return nil
}

// openTelemetry samples this machine every Config.SampleInterval. Each GPU
// sample is completed in the tick, before it is published, by the job
// manager (quarantines, jobs and processes) and then by the Slurm view
// (the Slurm jobs on a compute node's GPUs); neither writes to the
// replica there. The job manager's ledger hears the GPUs read again while
// the agent runs (one appeared or was lost, MIG changed).
func openTelemetry(cfg Config, self peer.ID, name string, gpus *gpu.Sampler, jm *jobs.Manager, sp *app.SlurmWatch, log *slog.Logger) *agent.Telemetry {
	acfg := agent.DefaultConfig()
	acfg.Interval = cfg.SampleInterval
	acfg.ID, acfg.Name, acfg.Version = self.String(), name, cfg.Version
	acfg.Annotate = func(taken time.Time, gs []gpu.Stats, held *alloc.Holding) {
		jm.AnnotateGPUs(taken, gs, held)
		sp.Annotate(taken, gs, held)
	}
	acfg.DevicesChanged = jm.Ledger().SetTopology
	return agent.New(acfg, gpus, host.NewSampler(host.DefaultConfig()), log)
}

// telemetryGPUs gives the job manager the latest GPU sample.
type telemetryGPUs struct{ t *late[*agent.Telemetry] }

// GPUs implements jobs.GPUState.
func (g telemetryGPUs) GPUs() []gpu.Stats {
	t, ok := g.t.get()
	if !ok {
		return nil // no telemetry yet: no sample
	}
	s, ok := t.Latest()
	if !ok {
		return nil
	}
	return s.GPUs
}
