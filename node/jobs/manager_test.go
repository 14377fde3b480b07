package jobs

import (
	"context"
	"errors"
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

// fakeRuntime records every call; containers run until stopped.
type fakeRuntime struct {
	mu       sync.Mutex
	calls    []string
	launches []containers.Launch
	cs       map[string]*containers.Container
	events   chan containers.Event
	errs     chan error
	failRun  error
	n        int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{cs: map[string]*containers.Container{}, events: make(chan containers.Event, 100), errs: make(chan error, 1)}
}

func (f *fakeRuntime) call(name string) {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.mu.Unlock()
}

func (f *fakeRuntime) Run(_ context.Context, l containers.Launch) (containers.Container, error) {
	f.call("Run")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRun != nil {
		return containers.Container{}, f.failRun
	}
	f.n++
	f.launches = append(f.launches, l)
	c := &containers.Container{ID: fmt.Sprintf("c%02d", f.n), Name: l.Name, Image: l.Image, Labels: l.Labels,
		State: "running", Running: true, Started: time.Now(), Ports: map[int]int{}}
	for i, p := range l.Ports {
		c.Ports[p] = 40000 + i
	}
	f.cs[c.ID] = c
	return *c, nil
}

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
	delete(f.cs, id)
	f.mu.Unlock()
	return nil
}
func (f *fakeRuntime) Inspect(_ context.Context, id string) (containers.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.cs[id]
	if !ok {
		return containers.Container{}, errors.New("No such container: " + id)
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
func (f *fakeRuntime) Logs(context.Context, string, bool, int) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("log line\n")), nil
}
func (f *fakeRuntime) Stats(context.Context, string) (containers.Usage, error) {
	return containers.Usage{CPUPercent: 50, MemUsedBytes: 1 << 20, PIDs: []int{4242}}, nil
}
func (f *fakeRuntime) Events(ctx context.Context) (<-chan containers.Event, <-chan error) {
	return f.events, f.errs
}
func (f *fakeRuntime) Images(context.Context) ([]containers.Image, error) { return nil, nil }
func (f *fakeRuntime) LoadImage(context.Context, io.Reader, containers.Progress) ([]string, error) {
	return nil, nil
}
func (f *fakeRuntime) PullImage(context.Context, string, containers.Progress) error { return nil }

type fixedGPUs []gpu.Stats

func (g fixedGPUs) GPUs() []gpu.Stats { return g }

type memStore struct {
	mu   sync.Mutex
	jobs map[string]Job
}

func (s *memStore) SaveJob(j Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]Job{}
	}
	s.jobs[j.ID] = j
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

func newTestManager(t *testing.T, rt *fakeRuntime, gpus int, st *memStore) (*Manager, context.CancelFunc) {
	t.Helper()
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(w, nil))
	cfg := DefaultConfig()
	cfg.Node = "NODE"
	m := NewManager(cfg, rt, fixedGPUs(fakeGPUs(gpus)), nil, st, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return m, cancel
}

func waitState(t *testing.T, m *Manager, id string, want State) Job {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		j, err := m.Get(id)
		if err == nil && j.State == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: state %s, want %s", id, j.State, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRefusedBeforeAnyDockerCall: a dangerous spec never reaches Docker.
func TestRefusedBeforeAnyDockerCall(t *testing.T) {
	rt := newFakeRuntime()
	m, _ := newTestManager(t, rt, 2, &memStore{})
	waitListed(t, rt)
	rt.mu.Lock()
	before := len(rt.calls)
	rt.mu.Unlock()
	for _, s := range []Spec{
		{Image: "x", Privileged: true}, {Image: "x", Binds: []string{"/:/h"}}, {Image: "x", CapAdd: []string{"SYS_ADMIN"}},
		{Image: "x", NetworkMode: "host"}, {Image: "x", GPUs: 3}, {Image: "x", Mounts: []Mount{{Folder: "f", Target: "/d"}}},
	} {
		var re *RefusedError
		if _, err := m.Submit(context.Background(), "o", s); !errors.As(err, &re) {
			t.Errorf("Submit(%+v) = %v, want a refusal", s, err)
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.calls) != before {
		t.Errorf("refused specs made Docker calls: %v", rt.calls[before:])
	}
}

// TestGrantNamesUUIDsAndQueue: the launch names the granted UUIDs; a
// queued job starts when the GPUs free up; without --queue the error says
// who holds them.
func TestGrantNamesUUIDsAndQueue(t *testing.T) {
	rt := newFakeRuntime()
	m, _ := newTestManager(t, rt, 2, &memStore{})
	ctx := context.Background()
	j1, err := m.Submit(ctx, "alice", Spec{Image: "img", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.launches[0].GPUs; len(got) != 2 || got[0] != "GPU-0000" || got[1] != "GPU-0001" {
		t.Errorf("launch GPUs %v, want the granted UUIDs", got)
	}
	if rt.launches[0].Labels[containers.LabelGPUs] != "GPU-0000,GPU-0001" || rt.launches[0].Labels[containers.LabelOwner] != "alice" {
		t.Errorf("labels %v", rt.launches[0].Labels)
	}
	_, err = m.Submit(ctx, "bob", Spec{Image: "img", GPUs: 1})
	var busy *BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("busy GPUs: %v", err)
	}
	q, err := m.Submit(ctx, "bob", Spec{Image: "img", GPUs: 1, Queue: true})
	if err != nil || q.State != Queued {
		t.Fatalf("queued submit: %+v %v", q, err)
	}
	rt.exit(j1.Container, 0)
	waitState(t, m, j1.ID, Exited)
	got := waitState(t, m, q.ID, Running)
	if len(got.GPUs) != 1 {
		t.Errorf("queued job started with GPUs %v", got.GPUs)
	}
}

// TestFairQueue: with one owner's long queue ahead, another owner's job
// starts first once a GPU frees up.
func TestFairQueue(t *testing.T) {
	rt := newFakeRuntime()
	m, _ := newTestManager(t, rt, 1, &memStore{})
	ctx := context.Background()
	run, _ := m.Submit(ctx, "alice", Spec{Image: "img", GPUs: 1})
	var aliceQ []Job
	for range 3 {
		j, _ := m.Submit(ctx, "alice", Spec{Image: "img", GPUs: 1, Queue: true})
		aliceQ = append(aliceQ, j)
		time.Sleep(2 * time.Millisecond)
	}
	bob, _ := m.Submit(ctx, "bob", Spec{Image: "img", GPUs: 1, Queue: true})
	rt.exit(run.Container, 0)
	waitState(t, m, bob.ID, Running)
	if j, _ := m.Get(aliceQ[0].ID); j.State != Queued {
		t.Errorf("alice's queued job %s, want bob first", j.State)
	}
}

// TestReadopt: a new manager (agent restarted) adopts running containers
// without restarting them and rebuilds the ledger; a record whose
// container vanished becomes failed.
func TestReadopt(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m1, stop1 := newTestManager(t, rt, 4, st)
	ctx := context.Background()
	var ids []string
	for range 3 {
		j, err := m1.Submit(ctx, "alice", Spec{Image: "img", GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	gone, _ := m1.Submit(ctx, "alice", Spec{Image: "img"})
	stop1()
	rt.mu.Lock()
	delete(rt.cs, gone.Container) // removed while the agent was down
	runs := rt.n
	rt.mu.Unlock()

	m2, _ := newTestManager(t, rt, 4, st)
	// The records load as running before the adoption runs: wait for the
	// adoption itself, seen in the ledger it rebuilds.
	deadline := time.Now().Add(5 * time.Second)
	for len(m2.Ledger().Granted()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("ledger after re-adoption: %v", m2.Ledger().Granted())
		}
		time.Sleep(time.Millisecond)
	}
	for _, id := range ids {
		waitState(t, m2, id, Running)
	}
	waitState(t, m2, gone.ID, Failed)
	if rt.n != runs {
		t.Errorf("re-adoption started %d containers", rt.n-runs)
	}
	if g := m2.Ledger().Granted(); len(g) != 3 {
		t.Errorf("ledger after re-adoption: %v", g)
	}
	if _, err := m2.Submit(ctx, "bob", Spec{Image: "img", GPUs: 2}); err == nil {
		t.Errorf("re-adopted GPUs were granted again")
	}
}

func TestStopIsNotFailure(t *testing.T) {
	rt := newFakeRuntime()
	m, _ := newTestManager(t, rt, 0, &memStore{})
	j, err := m.Submit(context.Background(), "o", Spec{Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Stop(context.Background(), j.ID)
	if err != nil || got.State != Exited || got.ExitCode == nil || *got.ExitCode != 143 {
		t.Fatalf("after stop: %+v %v", got, err)
	}
	if err := m.Remove(context.Background(), j.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(j.ID); !got.Removed || got.Container != "" {
		t.Errorf("after remove: %+v", got)
	}
}

func BenchmarkSubmit(b *testing.B) {
	rt := newFakeRuntime()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := NewManager(DefaultConfig(), rt, fixedGPUs(nil), nil, &memStore{}, log)
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Submit(ctx, "o", Spec{Image: "img", Cmd: []string{"sleep", "1"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEngineRestartReportsLostJobs: when the engine's stream breaks and its
// containers died meanwhile, the jobs say so and their GPUs are free.
func TestEngineRestartReportsLostJobs(t *testing.T) {
	rt := newFakeRuntime()
	m, _ := newTestManager(t, rt, 1, &memStore{})
	waitListed(t, rt) // the first adoption is over
	j, err := m.Submit(context.Background(), "o", Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	c := rt.cs[j.Container]
	c.Running, c.State, c.ExitCode, c.Finished = false, "exited", 137, time.Now() // the engine stopped it
	rt.mu.Unlock()
	rt.errs <- errors.New("unexpected EOF")
	got := waitState(t, m, j.ID, Failed)
	if !strings.Contains(got.Error, "Docker engine") {
		t.Errorf("lost job error %q does not say the engine went away", got.Error)
	}
	if g := m.Ledger().Granted(); len(g) != 0 {
		t.Errorf("GPUs still granted after the job was lost: %v", g)
	}
}

// waitListed waits until the manager has listed the engine's containers.
func waitListed(t *testing.T, rt *fakeRuntime) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rt.mu.Lock()
		n := slices.Index(rt.calls, "List")
		rt.mu.Unlock()
		if n >= 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the manager never listed containers")
		}
		time.Sleep(time.Millisecond)
	}
}
