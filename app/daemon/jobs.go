package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// executor is what runs this machine's jobs: its Docker engine, or the
// Slurm cluster it stands for (Config.Slurm), or nothing (err says why).
type executor struct {
	ex   jobs.Executor       // nil: none
	rt   *containers.Runtime // the Docker engine; nil without one
	card *slurm.Card         // the cluster's card; nil on a machine that stands for none
	err  error               // why this machine runs no containers
}

// openExecutor picks what runs this machine's jobs: with --slurm, the
// cluster; otherwise its Docker engine (DOCKER_HOST or the default
// socket), and where none is reachable, the cluster that answers here
// unless --slurm=false. Without either the node still serves telemetry
// and says why it cannot run jobs.
func openExecutor(ctx context.Context, cfg Config, self peer.ID, port int, policy func() jobs.Policy, log *slog.Logger) *executor {
	if cfg.Slurm == SlurmOn {
		return openSlurm(ctx, cfg, policy, log)
	}
	ccfg := containers.DefaultConfig()
	ccfg.Node = self.String()
	ccfg.GuardPorts = guardPorts(cfg, port)
	ccfg.ImageBook = filepath.Join(cfg.DataDir, "image-loaders.json")
	ccfg.Log = log
	rt, err := containers.Open(ctx, ccfg)
	if err == nil {
		return &executor{rt: rt, ex: containers.NewExecutor(rt, containers.ExecutorConfig{SimulatedGPUs: cfg.SimulateGPUs > 0 || cfg.GPUsByEnv})}
	}
	if cfg.Slurm == SlurmAuto {
		if slurm.Detect(ctx, &slurm.CmdRunner{Timeout: probeSlurm}) == nil {
			log.Info("no container engine, and a Slurm controller answers: standing for its cluster", "docker", err)
			return openSlurm(ctx, cfg, policy, log)
		}
	}
	if errors.Is(err, containers.ErrNoDocker) {
		log.Debug("docker engine", "err", err) // the client's own words, for whoever digs
		err = noEngineError{err}
	}
	log.Info("this machine runs no jobs, and launches on the pool's other machines, copies and opens tunnels as any member: " + err.Error())
	return &executor{err: err}
}

// noEngineError says in one sentence, shown to the pool as well, that no
// Docker engine answers here and what to do; errors.Is still finds
// containers.ErrNoDocker in it.
type noEngineError struct{ err error }

func (e noEngineError) Error() string {
	return "no Docker engine answers here (start Docker, or let this user open its socket, to run jobs here)"
}

func (e noEngineError) Unwrap() error { return e.err }

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
func openJobs(ctx context.Context, cfg Config, self string, db *store.DB, ex *executor, gpus *gpu.Sampler, reg *folders.Registry,
	state jobs.GPUState, memberName func(string) string, proof app.SlurmProof, log *slog.Logger) jobsPart {
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
	var st jobs.Store = nodestore.NewJobs(db, self)
	if ex.card != nil {
		st = ex.card.WatchJobs(st)
	}
	m := jobs.NewManager(jcfg, ex.ex, state, reg, st, log)
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
