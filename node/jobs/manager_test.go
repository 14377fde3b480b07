package jobs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/internal/leaktest"
	"github.com/labpool/labpool/node/gpu"
)

// TestRefusedBeforeAnyDockerCall: a dangerous spec never reaches the
// executor: the executor's own rules (here the fake's, refusing privileged;
// Docker's: containers.TestRefusedBeforeAnyDockerCall) and the portable ones.
func TestRefusedBeforeAnyDockerCall(t *testing.T) {
	rt := newFakeRuntime()
	m := startManager(t, rt, fixedGPUs(fakeGPUs(2)), &memStore{}, fakeFolders{"ro": false, "private": true})
	before := len(rt.callList())
	for _, s := range []Spec{
		{Image: "x", ContainerSpec: ContainerSpec{Privileged: true}},
		{Image: "x", GPUs: 3}, {Image: "x", Mounts: []Mount{{Folder: "f", Target: "/d"}}},
		{Image: "x", Mounts: []Mount{{Folder: "ro", Target: "/d", ReadWrite: true}}}, {Image: "x", Env: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
		{Image: "x", Mounts: []Mount{{Folder: "private", Target: "/d"}}}, // shared with alice alone
		{Image: "x", Nodes: 2, GPUsPerNode: 1}, {Image: "x", Partition: "gpu"}, {Cmd: []string{"hostname"}},
	} {
		var re *RefusedError
		if _, err := m.Submit(context.Background(), member("o"), s); !errors.As(err, &re) {
			t.Errorf("Submit(%+v) = %v, want a refusal", s, err)
		}
	}
	if calls := rt.callList()[before:]; len(calls) != 0 {
		t.Errorf("refused specs made Docker calls: %v", calls)
	}
	if len(m.List()) != 0 {
		t.Errorf("refused specs left records: %v", m.List())
	}
}

// TestSubmitLaunch: what reaches the executor is what was asked, labelled,
// with the grant pinned (what Docker gets of it:
// containers.TestExecutorLaunch).
func TestSubmitLaunch(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m := startManager(t, rt, fixedGPUs(fakeGPUs(4)), st, fakeFolders{"data": true, "ro": false})
	spec := Spec{Image: "img:1", Cmd: []string{"python", "train.py"}, Env: []string{"A=1"}, GPUIDs: []int{1, 3},
		CPUs: 4, MemoryBytes: 8 << 30, Ports: []int{8888},
		Mounts:        []Mount{{Folder: "data", Target: "/data/", ReadWrite: true}, {Folder: "ro", Target: "/ro"}},
		ContainerSpec: ContainerSpec{ShmBytes: 1 << 30, PortBinds: []string{"127.0.0.1::6006", "127.0.0.1:9000:8888"}, Restart: "on-failure"}}
	j, err := m.Submit(context.Background(), member("OWNER"), spec)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != Running || j.Owner != "OWNER" || j.Node != "NODE" || !slices.Equal(j.GPUIndexes, []int{1, 3}) || j.Ports[8888] == 0 {
		t.Errorf("job %+v", j)
	}
	l := rt.launches[0]
	wantLabels := map[string]string{LabelJob: j.ID, LabelOwner: "OWNER", LabelNode: "NODE",
		LabelGPUs: "GPU-0001,GPU-0003", LabelSpecHash: j.SpecHash, LabelName: j.Name}
	for k, v := range wantLabels {
		if l.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, l.Labels[k], v)
		}
	}
	if !slices.Equal(l.GPUs, []string{"GPU-0001", "GPU-0003"}) || !slices.Equal(l.Env, []string{"A=1"}) {
		t.Errorf("launch GPUs %v env %v", l.GPUs, l.Env)
	}
	if !slices.Equal(l.Ports, []int{8888, 6006}) || l.Resources.CPUs != 4 || l.Resources.MemoryBytes != 8<<30 || l.Container.ShmBytes != 1<<30 || l.Container.Restart != "on-failure" {
		t.Errorf("launch %+v", l)
	}
	wantMounts := []TaskMount{{HostPath: "/srv/data", Target: "/data"}, {HostPath: "/srv/ro", Target: "/ro", ReadOnly: true}}
	if !slices.Equal(l.Mounts, wantMounts) {
		t.Errorf("mounts %+v, want %+v", l.Mounts, wantMounts)
	}
	if got := st.job(j.ID); got.State != Running || got.Container == "" {
		t.Errorf("saved %+v", got)
	}
	j2, err := m.Submit(context.Background(), member("OWNER"), Spec{Image: "img"})
	if err != nil || len(rt.launches[1].GPUs) != 0 || len(j2.GPUs) != 0 {
		t.Errorf("a job without GPUs: %+v %v, GPUs %v", j2, err, rt.launches[1].GPUs)
	}
}

// TestNothingHalfCreated: a failed start leaves no task, no grant and no
// record (that Docker's create or start leaves no container:
// containers.TestRunRemovesWhatFailedToStart).
func TestNothingHalfCreated(t *testing.T) {
	tests := []struct {
		name string
		set  func(*fakeRuntime)
	}{
		{"image missing", func(f *fakeRuntime) {
			f.startFn = func(Task) (TaskStatus, error) {
				return TaskStatus{}, errors.New("image img is not on this machine")
			}
		}},
		{"start fails", func(f *fakeRuntime) {
			f.startFn = func(Task) (TaskStatus, error) {
				return TaskStatus{}, errors.New("a port is already in use on this machine")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newFakeRuntime()
			tt.set(rt)
			m := newTestManager(t, rt, 2, &memStore{})
			_, err := m.Submit(context.Background(), member("o"), Spec{Image: "img", GPUs: 2})
			if err == nil || !strings.Contains(err.Error(), "on this machine") {
				t.Fatalf("Submit = %v", err)
			}
			rt.mu.Lock()
			left := len(rt.cs)
			rt.mu.Unlock()
			if left != 0 || len(m.Ledger().Granted()) != 0 || len(m.List()) != 0 {
				t.Errorf("left behind: %d containers, grants %v, jobs %v", left, m.Ledger().Granted(), m.List())
			}
		})
	}
}

// TestGrantNamesUUIDsAndQueue: without Queue the error says who holds the
// GPUs; a queued job starts when they free up.
func TestGrantNamesUUIDsAndQueue(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 2, &memStore{})
	ctx := context.Background()
	j1, err := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1})
	var busy *BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "GPUs 0, 1: job "+j1.Name+" of alice") {
		t.Fatalf("busy GPUs: %v", err)
	}
	q, err := m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1, Queue: true})
	if err != nil || q.State != Queued {
		t.Fatalf("queued submit: %+v %v", q, err)
	}
	rt.exit(j1.Container, 0)
	ended := waitState(t, m, j1.ID, Exited)
	if ended.ExitCode == nil || *ended.ExitCode != 0 || ended.Finished == nil || ended.GPUSeconds <= 0 {
		t.Errorf("ended job %+v", ended)
	}
	got := waitState(t, m, q.ID, Running)
	if len(got.GPUs) != 1 || got.Error != "" {
		t.Errorf("queued job started with GPUs %v, error %q", got.GPUs, got.Error)
	}
}

// TestExternalProcessesAreBusy: a GPU used outside labpool is not granted.
func TestExternalProcessesAreBusy(t *testing.T) {
	rt := newFakeRuntime()
	gs := &fakeGPUState{gpus: fakeGPUs(2)}
	gs.gpus[0].Processes = []gpu.Process{{PID: 99, MemBytes: 1 << 30}}
	m := startManager(t, rt, gs, &memStore{}, nil)
	j, err := m.Submit(context.Background(), member("o"), Spec{Image: "img", GPUs: 1})
	if err != nil || !slices.Equal(j.GPUs, []string{"GPU-0001"}) {
		t.Fatalf("grant beside an external process: %+v %v", j, err)
	}
	// The job's own process on its GPU does not make it external.
	gs.gpus[1].Processes = []gpu.Process{{PID: 4242, MemBytes: 2 << 30}}
	_, err = m.Submit(context.Background(), member("o"), Spec{Image: "img", GPUs: 1})
	if err == nil || !strings.Contains(err.Error(), "GPU 0: a process outside labpool") || !strings.Contains(err.Error(), "GPU 1: job "+j.Name+" of o") {
		t.Fatalf("busy: %v", err)
	}
	st, err := m.Stats(context.Background(), j.ID)
	if err != nil || len(st.GPUs) != 1 || st.GPUs[0].MemUsedBytes != 2<<30 || st.CPUPercent != 50 {
		t.Errorf("stats %+v %v", st, err)
	}
}

func TestExitCodesAndStop(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 1, &memStore{})
	ctx := context.Background()
	j, err := m.Submit(ctx, member("o"), Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	rt.exit(j.Container, 3)
	got := waitState(t, m, j.ID, Failed)
	if *got.ExitCode != 3 || got.Error != "exited with code 3" || len(m.Ledger().Granted()) != 0 {
		t.Errorf("failed job %+v, grants %v", got, m.Ledger().Granted())
	}
	if _, err := m.Stats(ctx, j.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("stats of an ended job: %v", err)
	}
	j, _ = m.Submit(ctx, member("o"), Spec{Image: "img"})
	got, err = m.Stop(ctx, j.ID)
	if err != nil || got.State != Exited || got.ExitCode == nil || *got.ExitCode != 143 {
		t.Fatalf("after stop: %+v %v", got, err)
	}
	if err := m.Remove(ctx, j.ID, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(j.ID); !got.Removed || got.Container != "" || got.State != Exited {
		t.Errorf("after remove: %+v", got)
	}
	if _, err := m.Logs(ctx, j.ID, false, -1); !errors.Is(err, ErrConflict) {
		t.Errorf("logs of a removed job: %v", err)
	}
	if _, err := m.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(unknown) = %v", err)
	}
	// Remove of a running job is refused, naming the rule, and loses
	// nothing; forced, it stops the job first.
	j, _ = m.Submit(ctx, member("o"), Spec{Image: "img"})
	err = m.Remove(ctx, j.ID, false)
	if !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), "--force") || rt.running() != 1 {
		t.Errorf("remove running without force: %v, %d running", err, rt.running())
	}
	if got, _ := m.Get(j.ID); got.Removed || got.State != Running {
		t.Errorf("after a refused remove: %+v", got)
	}
	if err := m.Remove(ctx, j.ID, true); err != nil || rt.running() != 0 {
		t.Errorf("remove running with force: %v, %d running", err, rt.running())
	}
}

// TestReadopt: a new manager (agent restarted) adopts running containers
// without restarting them and rebuilds the ledger; partial state (a record
// without a container, a container without a record, corrupt labels, a
// container created but never started) is sorted out, not fatal.
func TestReadopt(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m1 := newTestManager(t, rt, 4, st)
	ctx := context.Background()
	var ids []string
	for range 3 {
		j, err := m1.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	gone, _ := m1.Submit(ctx, member("alice"), Spec{Image: "img"})
	orphan, _ := m1.Submit(ctx, member("bob"), Spec{Image: "img", Name: "orphan", GPUs: 1})
	rt.mu.Lock()
	delete(rt.cs, gone.Container) // removed while the agent was down
	rt.cs["bad"] = &TaskStatus{Handle: "bad", Labels: map[string]string{LabelJob: "../x y"}, State: TaskRunning}
	rt.cs["half"] = &TaskStatus{Handle: "half", State: TaskPending, Labels: map[string]string{LabelJob: "half1"}}
	rt.mu.Unlock()
	st.mu.Lock()
	delete(st.jobs, orphan.ID) // its record was lost
	st.jobs["stuck"] = Job{ID: "stuck", State: Starting, Created: time.Now()}
	st.mu.Unlock()
	starts := rt.count("Start")

	m2 := newTestManager(t, rt, 4, st)
	for _, id := range ids {
		if j, _ := m2.Get(id); j.State != Running {
			t.Errorf("job %s is %s after re-adoption", id, j.State)
		}
	}
	if j, _ := m2.Get(gone.ID); j.State != Failed || !strings.Contains(j.Error, "gone") {
		t.Errorf("vanished container: %+v", j)
	}
	if j, _ := m2.Get(orphan.ID); j.State != Running || j.Name != "orphan" || j.Owner != "bob" || len(j.GPUs) != 1 {
		t.Errorf("container without a record: %+v", j)
	}
	if j, _ := m2.Get("stuck"); j.State != Failed {
		t.Errorf("record stuck starting: %+v", j)
	}
	if j, _ := m2.Get("half1"); j.State != Failed || j.Container != "" {
		t.Errorf("container created, never started: %+v", j)
	}
	if n := rt.count("Start"); n != starts {
		t.Errorf("re-adoption started %d containers", n-starts)
	}
	if g := m2.Ledger().Granted(); len(g) != 4 {
		t.Errorf("ledger after re-adoption: %v", g)
	}
	if _, err := m2.Submit(ctx, member("carol"), Spec{Image: "img", GPUs: 1}); err == nil {
		t.Errorf("re-adopted GPUs were granted again")
	}
}

// TestEngineRestartReportsLostJobs: when the engine's stream breaks and its
// containers died meanwhile, the jobs say so, their GPUs are free, and the
// manager reconnects.
func TestEngineRestartReportsLostJobs(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 2, &memStore{})
	j, err := m.Submit(context.Background(), member("o"), Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	k, _ := m.Submit(context.Background(), member("o"), Spec{Image: "img", GPUs: 1})
	rt.mu.Lock()
	c := rt.cs[j.Container]
	c.State, c.ExitCode, c.Finished = TaskExited, 137, time.Now() // the engine stopped it
	delete(rt.cs, k.Container)                                    // and lost that one
	rt.mu.Unlock()
	lists := rt.count("List")
	rt.errs <- errors.New("unexpected EOF")
	got := waitState(t, m, j.ID, Failed)
	if !strings.Contains(got.Error, "Docker engine") {
		t.Errorf("lost job error %q does not say the engine went away", got.Error)
	}
	if got := waitState(t, m, k.ID, Failed); !strings.Contains(got.Error, "Docker engine") {
		t.Errorf("vanished job error %q", got.Error)
	}
	if g := m.Ledger().Granted(); len(g) != 0 {
		t.Errorf("GPUs still granted after the jobs were lost: %v", g)
	}
	if rt.count("List") <= lists || rt.count("Events") < 2 {
		t.Errorf("no reconnection: %v", rt.callList())
	}
}

// TestRunReturns: Run returns when ctx ends, with no goroutine left behind
// that still calls the runtime.
func TestRunReturns(t *testing.T) {
	before := leaktest.Count()
	rt := newFakeRuntime()
	m := NewManager(DefaultConfig(), rt, fixedGPUs(nil), nil, &memStore{}, testLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	eventually(t, "adoption", func() bool { return rt.count("List") > 0 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	leaktest.Check(t, before, 3*time.Second)
	if err := NewManager(DefaultConfig(), nil, fixedGPUs(nil), nil, &memStore{}, testLog()).Run(ctx); err != nil {
		t.Errorf("Run without an engine: %v", err)
	}
	if _, err := NewManager(DefaultConfig(), nil, fixedGPUs(nil), nil, &memStore{}, testLog()).Submit(ctx, member("o"), Spec{Image: "x"}); !errors.Is(err, ErrNoRuntime) {
		t.Errorf("Submit without an engine: %v", err)
	}
}

// BenchmarkSubmit is the manager's own overhead per launch (validate,
// grant, label, record) over a runtime that costs nothing.
func BenchmarkSubmit(b *testing.B) {
	rt := newFakeRuntime()
	m := NewManager(DefaultConfig(), rt, fixedGPUs(fakeGPUs(8)), fakeFolders{"data": true}, &memStore{}, testLog())
	ctx := context.Background()
	spec := Spec{Image: "img:1", Cmd: []string{"sleep", "1"}, Env: []string{"A=1"}, GPUs: 1, Ports: []int{8888},
		Mounts: []Mount{{Folder: "data", Target: "/data"}}}
	for b.Loop() {
		j, err := m.Submit(ctx, member("o"), spec)
		if err != nil {
			b.Fatal(err)
		}
		m.ledger.Release(j.ID) // the job ends; its GPU is free for the next
	}
}

// TestMountsFollowShareMembers: a share's member list holds for mounts: the
// member it names mounts it, another member is refused naming the rule.
func TestMountsFollowShareMembers(t *testing.T) {
	rt := newFakeRuntime()
	m := startManager(t, rt, fixedGPUs(fakeGPUs(2)), &memStore{}, fakeFolders{"private": true})
	spec := Spec{Image: "x", Mounts: []Mount{{Folder: "private", Target: "/d", ReadWrite: true}}}
	if _, err := m.Submit(context.Background(), member("alice"), spec); err != nil {
		t.Fatalf("the share's member mounting it: %v", err)
	}
	_, err := m.Submit(context.Background(), member("bob"), spec)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "not shared with bob") {
		t.Errorf("another member mounting it = %v; want a refusal naming the share's members", err)
	}
}
