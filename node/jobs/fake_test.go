package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/gpu"
)

// fakeRuntime is an engine in memory that records every call. Containers
// run until stopped or exit() is called. A non-nil func field replaces the
// default behaviour of that call.
type fakeRuntime struct {
	createFn func(containers.Launch) (containers.Container, error)
	startFn  func(id string) (containers.Container, error)
	loadFn   func(io.Reader, containers.Rights, containers.Progress) ([]string, error)
	pullFn   func(string, bool, containers.Progress) error
	remap    bool // the engine remaps users

	mu       sync.Mutex // guards the fields below
	calls    []string
	launches []containers.Launch
	cs       map[string]*containers.Container
	n        int

	events chan containers.Event
	errs   chan error
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{cs: map[string]*containers.Container{}, events: make(chan containers.Event, 1000), errs: make(chan error, 1)}
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

func (f *fakeRuntime) PruneNetworks(context.Context) error {
	f.call("PruneNetworks")
	return nil
}

func (f *fakeRuntime) Create(_ context.Context, l containers.Launch) (containers.Container, error) {
	f.call("Create")
	if f.createFn != nil {
		if c, err := f.createFn(l); err != nil {
			return c, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.launches = append(f.launches, l)
	c := &containers.Container{ID: fmt.Sprintf("c%04d", f.n), Name: l.Name, Image: l.Image, Labels: l.Labels,
		State: "created", Ports: map[int]int{}}
	f.cs[c.ID] = c
	return *c, nil
}

func (f *fakeRuntime) Start(_ context.Context, id string) (containers.Container, error) {
	f.call("Start")
	if f.startFn != nil {
		if c, err := f.startFn(id); err != nil {
			return c, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.cs[id]
	if !ok {
		return containers.Container{}, noContainer(id)
	}
	c.State, c.Running, c.Started, c.Addr = "running", true, time.Now(), "127.0.0.1"
	for i, p := range f.launchOf(id).Ports {
		c.Ports[p] = 40000 + i
	}
	return *c, nil
}

// launchOf is the launch that created container id; f.mu is held.
func (f *fakeRuntime) launchOf(id string) containers.Launch {
	var n int
	fmt.Sscanf(id, "c%d", &n)
	return f.launches[n-1]
}

// exit ends container id with code, as the engine would, and sends the
// die event.
func (f *fakeRuntime) exit(id string, code int) {
	f.mu.Lock()
	c := f.cs[id]
	c.Running, c.State, c.ExitCode, c.Finished = false, "exited", code, time.Now()
	labels := c.Labels
	f.mu.Unlock()
	f.events <- containers.Event{ID: id, Action: "die", Labels: labels}
}

func (f *fakeRuntime) Stop(_ context.Context, id string, _ time.Duration) error {
	f.call("Stop")
	f.exit(id, 143)
	return nil
}

func (f *fakeRuntime) Remove(_ context.Context, id string) error {
	f.call("Remove")
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.cs[id]; !ok {
		return noContainer(id)
	}
	delete(f.cs, id)
	return nil
}

func (f *fakeRuntime) Inspect(_ context.Context, id string) (containers.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.cs[id]
	if !ok {
		return containers.Container{}, noContainer(id)
	}
	return *c, nil
}

func (f *fakeRuntime) List(context.Context) ([]containers.Container, error) {
	f.call("List")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []containers.Container
	for _, c := range f.cs {
		out = append(out, *c)
	}
	return out, nil
}

// running is how many containers run.
func (f *fakeRuntime) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.cs {
		if c.Running {
			n++
		}
	}
	return n
}

func (f *fakeRuntime) Logs(_ context.Context, id string, follow bool, tail int) (io.ReadCloser, error) {
	f.call(fmt.Sprintf("Logs %s %v %d", id, follow, tail))
	return io.NopCloser(strings.NewReader("line 1\nline 2\n")), nil
}

func (f *fakeRuntime) Stats(context.Context, string) (containers.Usage, error) {
	f.call("Stats")
	return containers.Usage{CPUPercent: 50, MemUsedBytes: 1 << 20, MemLimitBytes: 1 << 30, PIDs: []int{4242, 4243}}, nil
}

func (f *fakeRuntime) Events(context.Context) (<-chan containers.Event, <-chan error) {
	f.call("Events")
	return f.events, f.errs
}

func (f *fakeRuntime) Images(context.Context) ([]containers.Image, error) {
	f.call("Images")
	return []containers.Image{{ID: "sha256:1", Tags: []string{"img:1"}, Size: 10}}, nil
}

func (f *fakeRuntime) LoadImage(_ context.Context, r io.Reader, rights containers.Rights, p containers.Progress) ([]string, error) {
	f.call(fmt.Sprintf("LoadImage force=%v registry=%v", rights.Force, rights.Registry))
	return f.loadFn(r, rights, p)
}

func (f *fakeRuntime) PullImage(_ context.Context, ref string, force bool, p containers.Progress) error {
	f.call("PullImage " + ref)
	return f.pullFn(ref, force, p)
}

func (f *fakeRuntime) RemapsUsers() bool { return f.remap }

// lastLaunch is the latest container asked for.
func (f *fakeRuntime) lastLaunch() containers.Launch {
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
		s.private[id] = Private{Env: slices.Clone(p.Env), Cmd: slices.Clone(p.Cmd)}
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
	cfg := DefaultConfig()
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
