package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// Config configures an Executor.
type Config struct {
	// Conf is slurm.conf, given to every command as SLURM_CONF; "" for
	// the client's default.
	Conf string
	// StateDir holds the batch scripts, the jobs' output files and the
	// executor's records. The compute nodes write the output there, so
	// on a real cluster it is on a filesystem they share with the submit
	// host (a home or project directory).
	StateDir string
	// Tick is how often the queue is read (default 1 s): every reader
	// within a tick shares one squeue.
	Tick time.Duration
	// IdleTick is how often the events read the queue while no labpool
	// job is pending or running (default 10 s).
	IdleTick time.Duration
	// Timeout bounds one Slurm command (default 30 s).
	Timeout time.Duration
	// Wrap is put before every command line (tests: nsenter).
	Wrap []string
	// Runner runs the commands; nil runs them as processes (CmdRunner).
	Runner Runner
	// User is the Unix user whose jobs may be labpool's; "" the current
	// user. Jobs of other users are never adopted, stopped or removed.
	User string
	// Containers lists the image runtimes to use, preferred first; nil
	// detects them (see DetectContainers).
	Containers []string
	Logger     *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// DefaultConfig is a Config with its defaults; StateDir is still to set.
func DefaultConfig() Config {
	return Config{Tick: time.Second, IdleTick: 10 * time.Second, Timeout: 30 * time.Second}
}

// Executor runs labpool's tasks as Slurm batch jobs. It implements
// jobs.Executor.
type Executor struct {
	cfg       Config
	run       Runner
	q         *queue
	log       *slog.Logger
	apptainer string // the apptainer or singularity binary, if any

	mu     sync.Mutex // guards recs and recGen
	recs   map[string]*record
	recGen uint64 // changes when a record is added, dropped, removed or final

	addrMu  sync.Mutex // guards addrs and addrsAt
	addrs   map[string]string
	addrsAt time.Time

	cluster clusterCache
	ports   portChecks    // ports found held by their job (HoldsPort)
	wake    chan struct{} // Start pokes the event loops (see Events)
}

var _ jobs.Executor = (*Executor)(nil)

// New makes an Executor, loading the records of its state directory.
func New(ctx context.Context, cfg Config) (*Executor, error) {
	def := DefaultConfig()
	if cfg.Tick <= 0 {
		cfg.Tick = def.Tick
	}
	if cfg.IdleTick <= 0 {
		cfg.IdleTick = def.IdleTick
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = def.Timeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StateDir == "" {
		return nil, errors.New("slurm: the executor needs a state directory")
	}
	if cfg.User == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("slurm: who runs the jobs: %w", err)
		}
		cfg.User = u.Username
	}
	e := &Executor{cfg: cfg, run: cfg.Runner, log: cfg.Logger, addrs: map[string]string{}, wake: make(chan struct{}, 1)}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.run == nil {
		e.run = &CmdRunner{Conf: cfg.Conf, Wrap: cfg.Wrap, Timeout: cfg.Timeout}
	}
	e.q = &queue{run: e.run, tick: cfg.Tick, now: cfg.Now, user: cfg.User}
	for _, d := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, "jobs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("slurm: state directory: %w", err)
		}
	}
	e.apptainer = apptainerBinary()
	if e.cfg.Containers == nil {
		e.cfg.Containers = DetectContainers(ctx, e.run)
	}
	recs, err := e.load()
	if err != nil {
		return nil, err
	}
	e.recs = recs
	return e, nil
}

// apptainerBinary is apptainer or singularity on PATH, or "".
func apptainerBinary() string {
	for _, b := range []string{"apptainer", "singularity"} {
		if _, err := exec.LookPath(b); err == nil {
			return b
		}
	}
	return ""
}

// DetectContainers says how images run on this cluster: pyxis when
// `srun --help` lists --container-image, apptainer when apptainer or
// singularity is on PATH.
func DetectContainers(ctx context.Context, run Runner) []string {
	have := []string{}
	if out, err := run.Run(ctx, "srun", "--help"); err == nil && strings.Contains(string(out), "--container-image") {
		have = append(have, Pyxis)
	}
	if apptainerBinary() != "" {
		have = append(have, Apptainer)
	}
	return have
}

// Capabilities says what a Slurm cluster runs.
func (e *Executor) Capabilities() jobs.Capabilities {
	return jobs.Capabilities{
		Name:      "slurm",
		Schedules: true,
		Commands:  true,
		MultiNode: true,
		Images:    append([]string(nil), e.cfg.Containers...),
	}
}

// Start writes t's batch script and submits it with sbatch.
func (e *Executor) Start(ctx context.Context, t jobs.Task) (jobs.TaskStatus, error) {
	comment, err := Comment(t.ID, t.Owner)
	if err != nil {
		return jobs.TaskStatus{}, err
	}
	b, err := buildBatch(t, batchPlan{
		Comment:    comment,
		Output:     filepath.Join(e.cfg.StateDir, "slurm-%j.out"),
		Dir:        e.cfg.StateDir,
		Containers: e.cfg.Containers,
		Apptainer:  e.apptainer,
	})
	if err != nil {
		return jobs.TaskStatus{}, err
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	script := filepath.Join(e.cfg.StateDir, "job-"+t.ID+"-"+hex.EncodeToString(nonce[:])+".sh")
	if err := os.WriteFile(script, []byte(b.Script), 0o700); err != nil {
		return jobs.TaskStatus{}, fmt.Errorf("write batch script of job %s: %w", t.ID, err)
	}
	out, err := e.run.Run(ctx, "sbatch", append(b.Args, script)...)
	if err != nil {
		os.Remove(script)
		return jobs.TaskStatus{}, fmt.Errorf("submit job %s: %w", t.ID, err)
	}
	handle, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";") // "ID;cluster"
	if !validHandle(handle) {
		os.Remove(script)
		return jobs.TaskStatus{}, fmt.Errorf("submit job %s: sbatch printed %q, not a job ID", t.ID, out)
	}
	e.q.invalidate()
	defer e.poke()
	st := jobs.TaskStatus{Handle: handle, JobID: t.ID, Labels: t.Labels, State: jobs.TaskPending, Ports: identity(t.Ports)}
	r := &record{Handle: handle, JobID: t.ID, Owner: t.Owner, Labels: t.Labels, Ports: t.Ports,
		Script: script, Output: e.outputPath(handle), CPUs: t.Resources.CPUs,
		MemoryB: t.Resources.MemoryBytes, Submitted: e.cfg.Now(), Last: st}
	if err := e.save(r); err != nil {
		_, cerr := e.run.Run(context.WithoutCancel(ctx), "scancel", handle)
		os.Remove(script)
		return jobs.TaskStatus{}, errors.Join(err, cerr)
	}
	e.mu.Lock()
	e.recs[handle] = r
	e.recGen++
	e.mu.Unlock()
	return st, nil
}

// outputPath is where job handle writes (sbatch --output ...slurm-%j.out).
func (e *Executor) outputPath(handle string) string {
	return filepath.Join(e.cfg.StateDir, "slurm-"+handle+".out")
}

// identity maps each port to itself: a job's port is reached on its node.
func identity(ports []int) map[int]int {
	if len(ports) == 0 {
		return nil
	}
	m := make(map[int]int, len(ports))
	for _, p := range ports {
		m[p] = p
	}
	return m
}
