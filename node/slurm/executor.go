package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
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
	// StateDir holds the executor's records of the jobs it submitted:
	// the agent's own, closed to every job account (New refuses it
	// otherwise). Jobs run and write in their account's home (see
	// account).
	StateDir string
	// JobUser is the Unix account a member's jobs run as when UserFor
	// maps them to none ("labpool-jobs"). It is never root nor the
	// agent's user. Required.
	JobUser string
	// UserFor maps a member (the device ID a task's Owner holds) to the
	// Unix account the cluster machine's owner gave them; "" (or a nil
	// UserFor) runs their jobs as JobUser.
	UserFor func(owner string) string
	// Private lists more paths no job account may reach (the agent's
	// data directory: its key and socket). New and every new account
	// check them, with StateDir (rule "the agent's data is closed to job
	// accounts").
	Private []string
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
	// It runs sbatch, scancel and job steps as the job's account, so it
	// is an AsRunner.
	Runner AsRunner
	// Opener is the command that opens a job's output as its account
	// when the agent is not root (CmdRunner.Opener): the labpool binary
	// and OpenOutputVerb, run through sudo.
	Opener []string
	// User is the agent's own Unix user; "" the current user. No job
	// runs as it: a job account equal to it is refused.
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
	run       AsRunner
	q         *queue
	log       *slog.Logger
	apptainer string // the apptainer or singularity binary, if any

	mu     sync.Mutex // guards recs and recGen
	recs   map[string]*record
	recGen uint64 // changes when a record is added, dropped, removed or final

	acctMu   sync.Mutex // guards accounts and outDirs
	self     *user.User // the agent's user
	accounts map[string]account
	outDirs  map[string]bool // accounts whose output directory was made

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
	self, err := user.Current()
	if cfg.User != "" {
		self, err = user.Lookup(cfg.User)
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: who runs the agent: %w", err)
	}
	cfg.User = self.Username
	if cfg.JobUser == "" {
		return nil, fmt.Errorf("%w: no job account: jobs never run as the agent's user; name one (agent --slurm-job-user labpool-jobs)", ErrJobAccount)
	}
	e := &Executor{cfg: cfg, run: cfg.Runner, log: cfg.Logger, addrs: map[string]string{}, wake: make(chan struct{}, 1),
		self: self, accounts: map[string]account{}, outDirs: map[string]bool{}}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.run == nil {
		e.run = &CmdRunner{Conf: cfg.Conf, Wrap: cfg.Wrap, Timeout: cfg.Timeout, Opener: cfg.Opener}
	}
	e.q = &queue{run: e.run, tick: cfg.Tick, now: cfg.Now, users: e.queueUsers}
	for _, d := range []string{cfg.StateDir, filepath.Join(cfg.StateDir, "jobs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("slurm: state directory: %w", err)
		}
	}
	if _, err := e.account(cfg.JobUser); err != nil {
		return nil, err
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

// Start submits t with sbatch as its account: the script on sbatch's
// standard input (no file of it anywhere), the environment's values in
// sbatch's own environment, named by --export (never in argv or the
// script), the job's directory and output in the account's home.
func (e *Executor) Start(ctx context.Context, t jobs.Task) (jobs.TaskStatus, error) {
	comment, err := Comment(t.ID, t.Owner)
	if err != nil {
		return jobs.TaskStatus{}, err
	}
	acct, err := e.accountFor(t.Owner)
	if err != nil {
		return jobs.TaskStatus{}, fmt.Errorf("submit job %s: %w", t.ID, err)
	}
	if err := e.makeOutDir(ctx, acct); err != nil {
		return jobs.TaskStatus{}, fmt.Errorf("submit job %s: %w", t.ID, err)
	}
	b, err := buildBatch(t, batchPlan{
		Comment:    comment,
		Output:     filepath.Join(acct.outDir(), "slurm-%j.out"),
		Dir:        acct.Home,
		Containers: e.cfg.Containers,
		Apptainer:  e.apptainer,
	})
	if err != nil {
		return jobs.TaskStatus{}, err
	}
	out, err := e.run.RunAs(ctx, As{User: acct.Name, Stdin: []byte(b.Script), Env: b.Env}, "sbatch", b.Args...)
	if err != nil {
		return jobs.TaskStatus{}, fmt.Errorf("submit job %s as %s: %w", t.ID, acct.Name, err)
	}
	handle, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";") // "ID;cluster"
	if !validHandle(handle) {
		return jobs.TaskStatus{}, fmt.Errorf("submit job %s: sbatch printed %q, not a job ID", t.ID, out)
	}
	e.q.invalidate()
	defer e.poke()
	st := jobs.TaskStatus{Handle: handle, JobID: t.ID, Labels: t.Labels, State: jobs.TaskPending, Ports: identity(t.Ports)}
	r := &record{Handle: handle, JobID: t.ID, Owner: t.Owner, User: acct.Name, Labels: t.Labels, Ports: t.Ports,
		Output: filepath.Join(acct.outDir(), "slurm-"+handle+".out"), CPUs: t.Resources.CPUs,
		MemoryB: t.Resources.MemoryBytes, Submitted: e.cfg.Now(), Last: st}
	if err := e.save(r); err != nil {
		_, cerr := e.run.RunAs(context.WithoutCancel(ctx), As{User: acct.Name}, "scancel", handle)
		return jobs.TaskStatus{}, errors.Join(err, cerr)
	}
	e.mu.Lock()
	e.recs[handle] = r
	e.recGen++
	e.mu.Unlock()
	return st, nil
}

// accountFor is the account owner's jobs run as.
func (e *Executor) accountFor(owner string) (account, error) {
	name := ""
	if e.cfg.UserFor != nil {
		name = e.cfg.UserFor(owner)
	}
	if name == "" {
		name = e.cfg.JobUser
	}
	return e.account(name)
}

// account looks name up once and checks it: not root, not the agent's
// user, and none of the agent's data open to it.
func (e *Executor) account(name string) (account, error) {
	e.acctMu.Lock()
	a, ok := e.accounts[name]
	e.acctMu.Unlock()
	if ok {
		return a, nil
	}
	a, err := lookupAccount(name, e.self)
	if err != nil {
		return account{}, err
	}
	if err := a.checkClosed(append([]string{e.cfg.StateDir}, e.cfg.Private...)...); err != nil {
		return account{}, err
	}
	e.acctMu.Lock()
	e.accounts[name] = a
	e.acctMu.Unlock()
	return a, nil
}

// makeOutDir makes the account's output directory, as the account, once
// per agent: mode 0700, the account's own.
func (e *Executor) makeOutDir(ctx context.Context, a account) error {
	e.acctMu.Lock()
	done := e.outDirs[a.Name]
	e.acctMu.Unlock()
	if done {
		return nil
	}
	if _, err := e.run.RunAs(ctx, As{User: a.Name}, "mkdir", "-p", "-m", "0700", "--", a.outDir()); err != nil {
		return fmt.Errorf("make the output directory of job account %s: %w", a.Name, err)
	}
	e.acctMu.Lock()
	e.outDirs[a.Name] = true
	e.acctMu.Unlock()
	return nil
}

// queueUsers is squeue's --user list: the job accounts of the records
// and the default one.
func (e *Executor) queueUsers() string {
	seen := map[string]bool{e.cfg.JobUser: true}
	list := []string{e.cfg.JobUser}
	e.mu.Lock()
	for _, r := range e.recs {
		if u := e.userOf(r); !seen[u] {
			seen[u] = true
			list = append(list, u)
		}
	}
	e.mu.Unlock()
	sort.Strings(list[1:])
	return strings.Join(list, ",")
}

// userOf is the Unix user r's job runs as: a record written before job
// accounts has none, and its job ran as the agent's user.
func (e *Executor) userOf(r *record) string {
	if r.User == "" {
		return e.cfg.User
	}
	return r.User
}

// runAsJob runs a command as the account of handle's job (scancel, a
// step of it); a record written before job accounts runs it as the
// agent.
func (e *Executor) runAsJob(ctx context.Context, handle, name string, args ...string) ([]byte, error) {
	if r := e.record(handle); r != nil && r.User != "" {
		return e.run.RunAs(ctx, As{User: r.User}, name, args...)
	}
	return e.run.Run(ctx, name, args...)
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
