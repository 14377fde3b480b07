package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// fakeRuntime is an executor in memory that records every call: a
// docker-like backend by default (caps). Its tasks run until stopped or
// exit() is called, except the commands of the conformance suite
// (fakeHarness): "exit CODE", "print LINE...", "print-sleep LINE...". A
// non-nil startFn replaces Start's default behaviour. The backend's state
// is behind a pointer, so that a restarted agent's executor (again) sees
// the same tasks.
type fakeRuntime struct {
	*fakeBackend
	startFn func(Task) (TaskStatus, error)
	remap   bool // the engine remaps users
	caps    Capabilities
	pending string // new tasks wait with this reason, as a scheduler's queue (set()) moves them on
}

// fakeBackend is what the fake's tasks live in.
type fakeBackend struct {
	mu       sync.Mutex // guards the fields below
	calls    []string
	launches []Task
	cs       map[string]*TaskStatus
	out      map[string]*fakeOutput
	n        int
	inspects int // calls of Inspect

	events chan TaskEvent
	errs   chan error
}

// fakeOutput is what a task wrote, and a channel closed at each change.
type fakeOutput struct {
	scripted bool // a command of the suite's: else its output is two lines
	lines    []string
	changed  chan struct{}
}

// dockerCaps are the capabilities of the Docker executor, as Validate reads
// them.
var dockerCaps = Capabilities{Name: "docker", Images: []string{"docker"}, Restart: true}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{fakeBackend: &fakeBackend{cs: map[string]*TaskStatus{}, out: map[string]*fakeOutput{},
		events: make(chan TaskEvent, 1000), errs: make(chan error, 1)},
		caps: dockerCaps}
}

// again is the executor a restarted agent opens over the same backend.
func (f *fakeRuntime) again() *fakeRuntime {
	return &fakeRuntime{fakeBackend: f.fakeBackend, remap: f.remap, caps: f.caps, pending: f.pending}
}

func (f *fakeRuntime) call(name string) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.mu.Unlock()
}

// callList returns the calls so far.
func (f *fakeRuntime) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeRuntime) count(name string) int {
	n := 0
	for _, c := range f.callList() {
		if c == name {
			n++
		}
	}
	return n
}

// slurmCaps are the capabilities of a Slurm cluster without pyxis nor
// Apptainer.
var slurmCaps = Capabilities{Name: "slurm", Schedules: true, Commands: true, MultiNode: true}

func (f *fakeRuntime) Capabilities() Capabilities {
	c := f.caps
	c.RemapsUsers = f.remap
	return c
}

func (f *fakeRuntime) Prune(context.Context) error {
	f.call("Prune")
	return nil
}

// ValidateTask stands for the container engine's rules: it refuses a
// privileged spec, so that tests see the manager call it first.
func (f *fakeRuntime) ValidateTask(s Spec) error {
	if s.Privileged {
		return refuse("no-privileged", "privileged containers can take over the host")
	}
	return nil
}

func (f *fakeRuntime) Start(_ context.Context, t Task) (TaskStatus, error) {
	f.call("Start")
	if f.startFn != nil {
		if st, err := f.startFn(t); err != nil {
			return st, err // a start that fails leaves nothing
		}
	}
	f.mu.Lock()
	f.n++
	f.launches = append(f.launches, t)
	id := fmt.Sprintf("c%04d", f.n)
	st := &TaskStatus{Handle: id, JobID: t.Labels[LabelJob], Labels: maps.Clone(t.Labels), Image: t.Image,
		State: TaskRunning, Started: time.Now(), Addr: "127.0.0.1", Ports: map[int]int{}}
	for i, p := range t.Ports {
		st.Ports[p] = 40000 + i
	}
	if f.pending != "" {
		st.State, st.Reason, st.Started, st.Addr, st.Ports = TaskPending, f.pending, time.Time{}, "", nil
	}
	f.cs[id] = st
	o := &fakeOutput{changed: make(chan struct{})}
	f.out[id] = o
	o.scripted = len(t.Cmd) > 0 && slices.Contains([]string{"exit", "print", "print-sleep"}, t.Cmd[0])
	f.mu.Unlock()
	f.run(id, t.Cmd)
	return f.Inspect(context.Background(), id)
}

// run plays the suite's commands.
func (f *fakeRuntime) run(id string, cmd []string) {
	if len(cmd) == 0 {
		return
	}
	switch cmd[0] {
	case "exit":
		code, _ := strconv.Atoi(cmd[1])
		f.exit(id, code)
	case "print":
		f.print(id, cmd[1:]...)
		f.exit(id, 0)
	case "print-sleep":
		f.print(id, cmd[1:]...)
	}
}

// print appends lines to task id's output.
func (f *fakeRuntime) print(id string, lines ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.out[id]
	o.lines = append(o.lines, lines...)
	close(o.changed)
	o.changed = make(chan struct{})
}

// launchOf is the task that started as id; f.mu is held.
func (f *fakeRuntime) launchOf(id string) Task {
	var n int
	fmt.Sscanf(id, "c%d", &n)
	return f.launches[n-1]
}

// set moves task id to state as a scheduler would (running on hosts,
// timed out...), and sends a "state" event.
func (f *fakeRuntime) set(id string, state TaskState, code int, hosts ...string) {
	f.mu.Lock()
	c := f.cs[id]
	c.State, c.ExitCode, c.Reason = state, code, ""
	if state == TaskRunning {
		c.Started, c.Hosts, c.Addr = time.Now(), hosts, "127.0.0.1"
		c.Ports = map[int]int{}
		for i, p := range f.launchOf(id).Ports {
			c.Ports[p] = 40000 + i
		}
	} else if state.Ended() {
		c.Finished = time.Now()
	}
	job := c.JobID
	f.mu.Unlock()
	f.events <- TaskEvent{Handle: id, JobID: job, Action: "state"}
}

// exit ends task id with code, as the backend would, and sends the die
// event.
func (f *fakeRuntime) exit(id string, code int) { f.end(id, TaskExited, code) }

func (f *fakeRuntime) end(id string, state TaskState, code int) {
	f.mu.Lock()
	c := f.cs[id]
	if c == nil || c.State.Ended() {
		f.mu.Unlock()
		return
	}
	c.State, c.ExitCode, c.Finished = state, code, time.Now()
	job := c.JobID
	if o := f.out[id]; o != nil {
		close(o.changed)
		o.changed = make(chan struct{})
	}
	f.mu.Unlock()
	f.events <- TaskEvent{Handle: id, JobID: job, Action: "die"}
}

func (f *fakeRuntime) Stop(_ context.Context, id string, _ time.Duration) error {
	f.call("Stop")
	f.mu.Lock()
	_, ok := f.cs[id]
	f.mu.Unlock()
	if !ok {
		return noContainer(id)
	}
	f.end(id, TaskCancelled, 143)
	return nil
}

func (f *fakeRuntime) Remove(_ context.Context, id string) error {
	f.call("Remove")
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cs, id)
	delete(f.out, id)
	return nil
}

func (f *fakeRuntime) Inspect(_ context.Context, id string) (TaskStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inspects++
	c, ok := f.cs[id]
	if !ok {
		return TaskStatus{}, noContainer(id)
	}
	st := *c
	st.Labels, st.Ports = maps.Clone(c.Labels), maps.Clone(c.Ports)
	return st, nil
}

func (f *fakeRuntime) List(context.Context) ([]TaskStatus, error) {
	f.call("List")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TaskStatus
	for _, c := range f.cs {
		out = append(out, *c)
	}
	return out, nil
}

// running is how many tasks run.
func (f *fakeRuntime) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.cs {
		if c.State == TaskRunning {
			n++
		}
	}
	return n
}

// Logs answers the task's output; a task that wrote nothing (the tests'
// plain jobs) answers two lines.
func (f *fakeRuntime) Logs(ctx context.Context, id string, follow bool, tail int) (io.ReadCloser, error) {
	f.call(fmt.Sprintf("Logs %s %v %d", id, follow, tail))
	f.mu.Lock()
	o, ok := f.out[id]
	var lines []string
	scripted, total := false, 0
	if ok {
		lines, scripted, total = slices.Clone(o.lines), o.scripted, len(o.lines)
	}
	f.mu.Unlock()
	if !ok {
		return nil, noContainer(id)
	}
	if !scripted {
		return io.NopCloser(strings.NewReader("line 1\nline 2\n")), nil
	}
	if tail > 0 && len(lines) > tail {
		lines = lines[len(lines)-tail:]
	}
	if !follow {
		return io.NopCloser(strings.NewReader(joinLines(lines))), nil
	}
	pr, pw := io.Pipe()
	go f.follow(ctx, id, total, joinLines(lines), pw)
	return pr, nil
}

// follow writes first, then task id's new lines from line sent on, until
// it ends or ctx does.
func (f *fakeRuntime) follow(ctx context.Context, id string, sent int, first string, pw *io.PipeWriter) {
	if _, err := io.WriteString(pw, first); err != nil {
		return
	}
	for {
		f.mu.Lock()
		o, c := f.out[id], f.cs[id]
		if o == nil || c == nil {
			f.mu.Unlock()
			pw.Close()
			return
		}
		more, ended, changed := slices.Clone(o.lines[sent:]), c.State.Ended(), o.changed
		sent = len(o.lines)
		f.mu.Unlock()
		if _, err := io.WriteString(pw, joinLines(more)); err != nil || ended {
			pw.Close()
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			pw.CloseWithError(ctx.Err())
			return
		}
	}
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func (f *fakeRuntime) Stats(context.Context, string) (TaskUsage, error) {
	f.call("Stats")
	return TaskUsage{CPUPercent: 50, MemUsedBytes: 1 << 20, MemLimitBytes: 1 << 30, PIDs: []int{4242, 4243}}, nil
}

func (f *fakeRuntime) Events(context.Context) (<-chan TaskEvent, <-chan error) {
	f.call("Events")
	return f.events, f.errs
}

// lastLaunch is the latest task asked for.
func (f *fakeRuntime) lastLaunch() Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.launches[len(f.launches)-1]
}

// fakeGPUState is GPUState over a settable slice.
type fakeGPUState struct {
	mu   sync.Mutex
	gpus []gpu.Stats
}

func (g *fakeGPUState) GPUs() []gpu.Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.gpus)
}

func (g *fakeGPUState) set(gs []gpu.Stats) {
	g.mu.Lock()
	g.gpus = gs
	g.mu.Unlock()
}

type fixedGPUs []gpu.Stats

func (g fixedGPUs) GPUs() []gpu.Stats { return g }

func fakeGPUs(n int) []gpu.Stats {
	out := make([]gpu.Stats, n)
	for i := range out {
		out[i] = gpu.Stats{Index: i, UUID: fmt.Sprintf("GPU-%04d", i), MemTotalBytes: 80 << 30}
	}
	return out
}

// memStore is the Store: jobs stands for the replicated log, env for the
// machine's local state.
type memStore struct {
	mu      sync.Mutex
	jobs    map[string]Job
	private map[string]Private
	saves   int
}

func (s *memStore) SavePrivate(id string, p Private) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.private == nil {
		s.private = map[string]Private{}
	}
	if p.Env == nil && p.Cmd == nil {
		delete(s.private, id)
	} else {
		s.private[id] = Private{Env: slices.Clone(p.Env), Cmd: slices.Clone(p.Cmd), Salt: p.Salt}
	}
	return nil
}

func (s *memStore) LoadPrivate(id string) (Private, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.private[id], nil
}

// member, admin, viewer are callers of those roles.
func member(id string) Caller { return Caller{ID: id, Role: RoleMember} }
func admin(id string) Caller  { return Caller{ID: id, Role: RoleAdmin} }
func viewer(id string) Caller { return Caller{ID: id, Role: RoleViewer} }

// job returns the saved record of id, read under the lock (the manager
// saves from its own goroutines).
func (s *memStore) job(id string) Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id]
}

func (s *memStore) SaveJob(j Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]Job{}
	}
	s.jobs[j.ID] = j
	s.saves++
	return nil
}

func (s *memStore) LoadJobs() ([]Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Job
	for _, j := range s.jobs {
		out = append(out, j)
	}
	return out, nil
}

type fakeFolders map[string]bool // name -> writable; a name "private" is shared with "alice" alone

func (f fakeFolders) ResolveFor(name, member string, rw bool) (string, error) {
	w, ok := f[name]
	switch {
	case !ok:
		return "", fmt.Errorf("no folder %q is shared", name)
	case name == "private" && member != "alice":
		return "", fmt.Errorf("refused: folder %q is not shared with %s", name, member)
	case rw && !w:
		return "", fmt.Errorf("refused: folder %q is shared read-only", name)
	}
	return "/srv/" + name, nil
}

func testLog() *slog.Logger {
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// startManager runs a manager over rt until the test ends, and waits for
// its first adoption.
func startManager(t *testing.T, rt *fakeRuntime, gpus GPUState, st *memStore, folders FolderResolver) *Manager {
	t.Helper()
	return startManagerCfg(t, DefaultConfig(), rt, gpus, st, folders)
}

// startManagerCfg is startManager with cfg (its Node is set).
func startManagerCfg(t *testing.T, cfg Config, rt *fakeRuntime, gpus GPUState, st *memStore, folders FolderResolver) *Manager {
	t.Helper()
	cfg.Node = "NODE"
	m := NewManager(cfg, rt, gpus, folders, st, testLog())
	listed := rt.count("List")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	eventually(t, "the first adoption", func() bool { return rt.count("List") > listed })
	m.ops.Lock() // the adoption is over once its lock is free
	m.ops.Unlock()
	return m
}

func newTestManager(t *testing.T, rt *fakeRuntime, gpus int, st *memStore) *Manager {
	return startManager(t, rt, fixedGPUs(fakeGPUs(gpus)), st, nil)
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitState(t *testing.T, m *Manager, id string, want State) Job {
	t.Helper()
	var j Job
	eventually(t, fmt.Sprintf("job %s to be %s", id, want), func() bool {
		j, _ = m.Get(id)
		return j.State == want
	})
	return j
}

// noContainer is the engine's answer about a container it does not have: a
// not-found error as Docker's errdefs types it.
type noContainer string

func (id noContainer) Error() string { return "No such container: " + string(id) }
func (noContainer) NotFound()        {}
