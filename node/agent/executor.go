package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/mps"
	"github.com/labpool/labpool/node/slurm"
)

// SlurmMode says whether the agent stands for a Slurm cluster: its jobs
// are submitted with sbatch, and its node record carries the cluster's
// card.
type SlurmMode int

// Slurm modes.
const (
	SlurmOff  SlurmMode = iota // never (the window, labpool web)
	SlurmAuto                  // when sinfo answers and no Docker engine is reachable
	SlurmOn                    // agent --slurm
)

// ExecutorConfig says what may run this machine's jobs.
type ExecutorConfig struct {
	Node    string // this machine's device ID
	DataDir string // the agent's data directory: kept from jobs, and where image loaders are booked
	// Slurm, SlurmDir and SlurmJobUser: whether it stands for a Slurm
	// cluster, where the agent keeps its records of its jobs (""
	// DataDir/slurm) and the Unix account members' jobs run as unless the
	// policy maps them to their own (slurm.Config.JobUser).
	Slurm        SlurmMode
	SlurmDir     string
	SlurmJobUser string
	GuardPorts   []int // this machine's ports no job may reach
	// SimulatedGPUs grants GPUs through NVIDIA_VISIBLE_DEVICES alone
	// (containers.ExecutorConfig).
	SimulatedGPUs bool
	// Policy is this machine's policy: the Unix accounts of members'
	// Slurm jobs.
	Policy func() jobs.Policy
}

// Executor is what runs this machine's jobs: its Docker engine, or the
// Slurm cluster it stands for, or nothing (Err says why).
type Executor struct {
	Jobs    jobs.Executor       // nil: none
	Runtime *containers.Runtime // the Docker engine; nil without one
	Card    *slurm.Card         // the cluster's card; nil on a machine that stands for none
	MPS     *mps.Daemons        // the MPS daemons of GPU shares; nil: shares are time-sliced
	Err     error               // why this machine runs no jobs
}

// probeSlurm bounds how long detection waits for sinfo: an unreachable
// controller makes the clients wait their MessageTimeout (10 s).
const probeSlurm = 3 * time.Second

// OpenExecutor picks what runs this machine's jobs: with SlurmOn, the
// cluster; otherwise its Docker engine (DOCKER_HOST or the default
// socket), and where none is reachable, the cluster that answers here
// unless SlurmOff. Without either the node still serves telemetry and
// says why it cannot run jobs.
func OpenExecutor(ctx context.Context, cfg ExecutorConfig, log *slog.Logger) *Executor {
	if cfg.Slurm == SlurmOn {
		return openSlurm(ctx, cfg, log)
	}
	ccfg := containers.DefaultConfig()
	ccfg.Node = cfg.Node
	ccfg.GuardPorts = cfg.GuardPorts
	ccfg.ImageBook = filepath.Join(cfg.DataDir, "image-loaders.json")
	ccfg.Log = log
	rt, err := containers.Open(ctx, ccfg)
	if err == nil {
		ecfg := containers.ExecutorConfig{SimulatedGPUs: cfg.SimulatedGPUs}
		m := openMPS(filepath.Join(cfg.DataDir, "mps"), ccfg.JobUser, cfg.SimulatedGPUs, rt.RemapsUsers(), log)
		if m != nil {
			ecfg.MPS = m
		}
		return &Executor{Runtime: rt, Jobs: containers.NewExecutor(rt, ecfg), MPS: m}
	}
	if cfg.Slurm == SlurmAuto {
		if slurm.Detect(ctx, &slurm.CmdRunner{Timeout: probeSlurm}) == nil {
			log.Info("no container engine, and a Slurm controller answers: standing for its cluster", "docker", err)
			return openSlurm(ctx, cfg, log)
		}
	}
	if errors.Is(err, containers.ErrNoDocker) {
		log.Debug("docker engine", "err", err) // the client's own words, for whoever digs
		err = noEngineError{err}
	}
	log.Info("this machine runs no jobs, and launches on the pool's other machines, copies and opens tunnels as any member: " + err.Error())
	return &Executor{Err: err}
}

// noEngineError says in one sentence, shown to the pool as well, that no
// Docker engine answers here and what to do; errors.Is still finds
// containers.ErrNoDocker in it.
type noEngineError struct{ err error }

func (e noEngineError) Error() string {
	return "no Docker engine answers here (start Docker, or let this user open its socket, to run jobs here)"
}

func (e noEngineError) Unwrap() error { return e.err }

// openSlurm makes the executor of the Slurm cluster this agent stands
// for: Slurm's commands on PATH, configured as for any client (SLURM_CONF
// or Slurm's default), with the card it publishes. A controller down now
// is no error: the card says so until it answers. Its jobs run as the
// accounts the policy maps their owners to.
func openSlurm(ctx context.Context, c ExecutorConfig, log *slog.Logger) *Executor {
	cfg := slurm.DefaultConfig()
	cfg.StateDir = c.SlurmDir
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(c.DataDir, "slurm")
	}
	cfg.Logger = log
	cfg.JobUser = c.SlurmJobUser
	cfg.Private = []string{c.DataDir} // the key, the socket, the replica
	if exe, err := os.Executable(); err == nil {
		cfg.Opener = []string{exe, slurm.OpenOutputVerb} // sudo runs it as a job's account: see main
	}
	cfg.UserFor = func(owner string) string { return c.Policy().SlurmUsers[owner] }
	ex, err := slurm.New(ctx, cfg)
	if err != nil {
		log.Error("this machine stands for no Slurm cluster and runs no jobs", "err", err)
		return &Executor{Err: fmt.Errorf("stand for the Slurm cluster: %w", err)}
	}
	log.Info("standing for a Slurm cluster: jobs are submitted with sbatch", "state", cfg.StateDir, "job_user", cfg.JobUser)
	return &Executor{Jobs: ex, Card: slurm.NewCard(ex, slurm.CardEvery)}
}

// openMPS starts the MPS control daemons' keeper of this machine's GPU
// shares in dir, where it can cap them: real GPUs, nvidia-cuda-mps-control,
// root (each daemon gets a mount namespace of its own), and an engine that
// runs jobs as the jobs' user (remap false: the daemons' directories are
// that user's). nil: shares are time-sliced and uncapped, and the log says
// why.
func openMPS(dir, jobUser string, simulated, remap bool, log *slog.Logger) *mps.Daemons {
	why := ""
	switch {
	case simulated:
		why = "the GPUs are simulated"
	case remap:
		why = "the container engine remaps users, and MPS serves one user's clients"
	case os.Geteuid() != 0:
		why = "MPS daemons need the agent to run as root (each gets a mount namespace of its own)"
	}
	cfg := mps.DefaultConfig(dir)
	cfg.Log = log
	if uid, gid, ok := numericUser(jobUser); ok {
		cfg.UID, cfg.GID = uid, gid
	}
	m, err := mps.New(cfg)
	if why == "" && err != nil {
		why = err.Error()
	}
	if why != "" {
		log.Info("GPU shares here are time-sliced and uncapped: " + why)
		return nil
	}
	return m
}

// numericUser reads "uid:gid".
func numericUser(s string) (int, int, bool) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	return uid, gid, ok && err1 == nil && err2 == nil && uid >= 0 && gid >= 0
}
