package daemon

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strconv"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// openExecutor picks what runs this machine's jobs (agent.OpenExecutor):
// its Docker engine, the Slurm cluster it stands for (Config.Slurm), or
// nothing.
func openExecutor(ctx context.Context, cfg Config, self peer.ID, port int, policy func() jobs.Policy, log *slog.Logger) *agent.Executor {
	return agent.OpenExecutor(ctx, agent.ExecutorConfig{Node: self.String(), DataDir: cfg.DataDir, Slurm: cfg.Slurm,
		SlurmDir: cfg.SlurmDir, SlurmJobUser: cfg.SlurmJobUser, GuardPorts: guardPorts(cfg, port),
		SimulatedGPUs: cfg.SimulateGPUs > 0 || cfg.GPUsByEnv, Policy: policy}, log)
}

// guardPorts are this machine's ports that no job may reach: labpool's
// default port, the one it listens on (QUIC over UDP; TCP for the data
// path), and the metrics port.
func guardPorts(cfg Config, port int) []int {
	ports := slices.Clone(containers.DefaultGuardPorts)
	for _, a := range []string{cfg.Listen, cfg.Metrics} {
		if _, p, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				ports = append(ports, n)
			}
		}
	}
	if port > 0 {
		ports = append(ports, port)
	}
	return ports
}

// jobsPart is the job manager over this machine's executor, with the
// machine's policy and GPU quarantines read back, and the writer that
// keeps the quarantines.
type jobsPart struct {
	m      *jobs.Manager
	health *nodestore.HealthWriter
}

// openJobs builds the job manager. Where the executor schedules (a
// cluster's agent), the idle reclaim policy judges its Slurm jobs by their
// compute nodes' samples, and stats shows their GPUs as those nodes report
// them (proof says which machines are its compute nodes).
func openJobs(ctx context.Context, cfg Config, self string, db *store.DB, ex *agent.Executor, gpus *gpu.Sampler, reg *folders.Registry,
	state jobs.GPUState, memberName func(string) string, proof app.SlurmProof, queue *app.PoolQueue, log *slog.Logger) jobsPart {
	jcfg := jobs.DefaultConfig()
	jcfg.Node = self
	jcfg.MemberName = memberName
	jcfg.Devices = []gpu.Info{}
	var clearer jobs.FaultClearer // a nil interface without NVML
	if gpus != nil {
		jcfg.Devices = append(jcfg.Devices, gpus.Devices()...)
		clearer = gpus
	}
	jcfg.GrantEdge = gpus.ReadEnergy // nil Sampler without a driver: a no-op
	slurmGPUs := app.NewSlurmIdle(db, proof)
	jcfg.RemoteIdle = slurmGPUs.Idle
	jcfg.RemoteGPUs = slurmGPUs.GPUs
	queue.Configure(&jcfg)
	var st jobs.Store = nodestore.NewJobs(db, self)
	if ex.Card != nil {
		st = ex.Card.WatchJobs(st)
	}
	m := jobs.NewManager(jcfg, ex.Jobs, state, reg, st, log)
	health := nodestore.NewHealthWriter(nodestore.NewHealth(db), log)
	if err := m.OpenHealth(ctx, health, clearer); err != nil {
		log.Error("GPU quarantines not read: none applies until the next restart", "err", err)
	}
	if p, err := nodestore.NewPolicy(db, m).Load(ctx); err != nil {
		log.Error("read this machine's policy: keeping the defaults", "err", err)
	} else if err := m.SetPolicy(p); err != nil {
		log.Error("this machine's stored policy is refused: keeping the defaults", "err", err)
	}
	return jobsPart{m, health}
}

// Run runs the job manager, its idle reclaim and the quarantines' writer
// until ctx is cancelled.
func (j jobsPart) Run(ctx context.Context) error {
	return runAll(ctx, j.m.Run, j.m.RunReclaim, j.health.Run)
}

// Close writes the quarantines saved since the writer's last write.
func (j jobsPart) Close() error { return j.health.Close() }
