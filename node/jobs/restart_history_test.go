package jobs

import (
	"context"
	"testing"
)

// forgetStops is the Docker engine as a restarted agent finds it: the
// executor kept in memory which containers it stopped (docker stop), so
// a container stopped by an earlier run reads as one that exited 143.
func (f *fakeBackend) forgetStops() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cs {
		if c.State == TaskCancelled {
			c.State = TaskExited
		}
	}
}

// TestRestartKeepsEndedJobs: an agent restart changes no ended job's
// history. A job stopped by its owner read "cancelled"; after a restart,
// its container (still there, exited 143 to an executor that no longer
// remembers stopping it) made it "exited 143", while a job stopped the
// same way whose container was removed stayed "cancelled".
func TestRestartKeepsEndedJobs(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	cfg := DefaultConfig()
	cfg.Node = "NODE"
	before := NewManager(cfg, rt, fixedGPUs(fakeGPUs(2)), nil, st, testLog())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- before.Run(runCtx) }()
	eventually(t, "the first adoption", func() bool { return rt.count("List") > 0 })
	ctx := context.Background()
	var ids []string
	for range 2 {
		j, err := before.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, before, j.ID, Running)
		ids = append(ids, j.ID)
	}
	want := map[string]Job{}
	for _, id := range ids {
		j, err := before.Stop(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Outcome != "cancelled" {
			t.Fatalf("stopped job %s: outcome %q, want cancelled", id, j.Outcome)
		}
		want[id] = j
	}
	// The second job's container goes (docker rm); the first's stays.
	if err := before.Remove(ctx, ids[1], false); err != nil {
		t.Fatal(err)
	}
	if j, err := before.Get(ids[1]); err == nil {
		want[ids[1]] = j
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	rt.forgetStops()
	again := rt.again()
	lists := rt.count("List")
	after := NewManager(cfg, again, fixedGPUs(fakeGPUs(2)), nil, st, testLog())
	runCtx, stop = context.WithCancel(context.Background())
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	go func() { done <- after.Run(runCtx) }()
	eventually(t, "the adoption after the restart", func() bool { return rt.count("List") > lists })
	after.ops.Lock() // the adoption holds it until it is done
	after.ops.Unlock()
	for _, id := range ids {
		got, err := after.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		w := want[id]
		if got.State != w.State || got.Outcome != w.Outcome || got.Error != w.Error || !sameCode(got.ExitCode, w.ExitCode) {
			t.Errorf("job %s after the restart: %s outcome %q error %q code %v; want as before: %s outcome %q error %q code %v",
				id, got.State, got.Outcome, got.Error, deref(got.ExitCode), w.State, w.Outcome, w.Error, deref(w.ExitCode))
		}
	}
}

func sameCode(a, b *int) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestRestartDuringStop: the agent stops between stopping a job's
// container and reading its end; the restarted agent, whose executor no
// longer remembers the stop, records it "cancelled" as the first would
// have, not "exited 143".
func TestRestartDuringStop(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	cfg := DefaultConfig()
	cfg.Node = "NODE"
	before := NewManager(cfg, rt, fixedGPUs(fakeGPUs(1)), nil, st, testLog())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- before.Run(runCtx) }()
	eventually(t, "the first adoption", func() bool { return rt.count("List") > 0 })
	ctx := context.Background()
	j, err := before.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	j = waitState(t, before, j.ID, Running)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	// What Stop does before the agent dies: the record says stopped, the
	// container is stopped, its end is not read yet.
	if _, err := before.update(j.ID, func(j *Job) error { j.Error = stoppedByUser; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := rt.Stop(ctx, j.Container, 0); err != nil {
		t.Fatal(err)
	}
	rt.forgetStops()

	lists := rt.count("List")
	after := NewManager(cfg, rt.again(), fixedGPUs(fakeGPUs(1)), nil, st, testLog())
	runCtx, stop = context.WithCancel(context.Background())
	go func() { done <- after.Run(runCtx) }()
	eventually(t, "the adoption after the restart", func() bool { return rt.count("List") > lists })
	after.ops.Lock()
	after.ops.Unlock()
	got, err := after.Get(j.ID)
	stop()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got.State != Exited || got.Outcome != "cancelled" {
		t.Errorf("after the restart: %s outcome %q error %q; want exited, cancelled", got.State, got.Outcome, got.Error)
	}
}

// TestApplyRestarts: a job with --restart on-failure counts the engine's
// restarts of its task, and the count never goes down (a record adopted
// again, a task read before a restart's event).
func TestApplyRestarts(t *testing.T) {
	tests := []struct {
		name     string
		had, saw int
		want     int
	}{
		{"first restart", 0, 1, 1},
		{"more", 1, 3, 3},
		{"an older reading", 3, 2, 3},
		{"never restarted", 0, 0, 0},
	}
	for _, tt := range tests {
		j := Job{State: Running, Restarts: tt.had}
		apply(&j, TaskStatus{State: TaskRunning, Restarts: tt.saw}, false)
		if j.Restarts != tt.want {
			t.Errorf("%s: restarts %d, want %d", tt.name, j.Restarts, tt.want)
		}
	}
}
