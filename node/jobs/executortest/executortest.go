// Package executortest is the conformance suite of jobs.Executor: what the
// job manager relies on from every backend (Docker in node/containers,
// Slurm in node/slurm, the in-memory fake of node/jobs' tests), run
// against the real one.
//
// A backend's test calls Run with a Harness: how to open an executor (and
// open it again, as a restarted agent would), what every task needs there
// (an image, a partition), and four commands in the backend's terms: one
// that exits with a given code, one that prints lines, one that runs until
// stopped, one that prints lines then runs until stopped. For a shell:
//
//	executortest.Run(t, executortest.Harness{
//		New:            func(t *testing.T) jobs.Executor { return open(t) },
//		Restart:        func(t *testing.T, _ jobs.Executor) jobs.Executor { return open(t) },
//		Task:           jobs.Task{Image: "busybox"},
//		Exit:           func(code int) []string { return []string{"sh", "-c", "exit " + strconv.Itoa(code)} },
//		Print:          func(lines ...string) []string { return append([]string{"echo", "-e"}, strings.Join(lines, `\n`)) },
//		Forever:        []string{"sleep", "3600"},
//		PrintThenSleep: func(lines ...string) []string { return []string{"sh", "-c", `printf '%s\n' "$@"; exec sleep 3600`, "sh", ...} },
//	})
//
// The cases: start and inspect, stop (cancelled or exited within the grace
// period), remove (gone afterwards), adopt after a restart (List from a new
// executor finds the running task with its job and labels, not started
// again), events (a state change is sent), logs (tail, all, follow until
// the task ends) and exit codes (0 and 3). Every case starts its own tasks,
// labelled with a fresh job ID, and stops and removes them when it ends.
package executortest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// Harness is what the suite needs of a backend.
type Harness struct {
	// New returns an executor over the backend, as an agent opens it.
	New func(t *testing.T) jobs.Executor
	// Restart returns a new executor over the same backend as old, as an
	// agent restarted would open it (nothing of old's memory carries
	// over).
	Restart func(t *testing.T, old jobs.Executor) jobs.Executor
	// Task is what every task needs on this backend (an image, a
	// partition, resources); the suite sets its ID, Name, Owner, Cmd and
	// Labels.
	Task jobs.Task
	// Exit is a command that exits with code at once.
	Exit func(code int) []string
	// Print is a command that writes each line to stdout, then exits 0.
	Print func(lines ...string) []string
	// Forever is a command that runs until it is stopped (and ends on
	// SIGTERM).
	Forever []string
	// PrintThenSleep is a command that writes each line to stdout, then
	// runs until it is stopped.
	PrintThenSleep func(lines ...string) []string
	// Grace is the grace period the suite stops tasks with (0: 2 s).
	Grace time.Duration
	// Timeout bounds each wait for the backend (a task to start, to end,
	// an event, output); 0: 30 s. A backend that polls needs more than its
	// poll interval.
	Timeout time.Duration
}

func (h Harness) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 30 * time.Second
}

func (h Harness) grace() time.Duration {
	if h.Grace > 0 {
		return h.Grace
	}
	return 2 * time.Second
}

// Run runs every case of the suite against h's backend.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"StartInspect", testStartInspect},
		{"Stop", testStop},
		{"Remove", testRemove},
		{"Adopt", testAdopt},
		{"Events", testEvents},
		{"Logs", testLogs},
		{"ExitCodes", testExitCodes},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// newJobID is a fresh job ID, as the manager makes them.
func newJobID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// start starts a task running cmd on ex and removes it when the test ends.
func start(t *testing.T, h Harness, ex jobs.Executor, cmd []string) (jobs.Task, jobs.TaskStatus) {
	t.Helper()
	task := h.Task
	task.ID = newJobID()
	task.Name = "conformance-" + task.ID[:6]
	task.Owner = "conformance-owner"
	task.Cmd = cmd
	task.Labels = maps.Clone(h.Task.Labels)
	if task.Labels == nil {
		task.Labels = map[string]string{}
	}
	task.Labels[jobs.LabelJob] = task.ID
	task.Labels[jobs.LabelOwner] = task.Owner
	task.Labels[jobs.LabelName] = task.Name
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout())
	defer cancel()
	st, err := ex.Start(ctx, task)
	if err != nil {
		t.Fatalf("Start(%v): %v", cmd, err)
	}
	if st.Handle == "" {
		t.Fatalf("Start(%v) returned no handle: %+v", cmd, st)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout())
		defer cancel()
		ex.Stop(ctx, st.Handle, 0)
		ex.Remove(ctx, st.Handle)
	})
	return task, st
}

// waitFor inspects handle until ok says so, and returns that status.
func waitFor(t *testing.T, h Harness, ex jobs.Executor, handle, what string, ok func(jobs.TaskStatus) bool) jobs.TaskStatus {
	t.Helper()
	deadline := time.Now().Add(h.timeout())
	var last jobs.TaskStatus
	var err error
	for time.Now().Before(deadline) {
		last, err = ex.Inspect(context.Background(), handle)
		if err == nil && ok(last) {
			return last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s did not get %s within %v: last %+v, %v", handle, what, h.timeout(), last, err)
	return last
}

func running(s jobs.TaskStatus) bool { return s.State == jobs.TaskRunning }
func ended(s jobs.TaskStatus) bool   { return s.State.Ended() }

// testStartInspect: a started task runs, and Inspect names its job and
// keeps its labels.
func testStartInspect(t *testing.T, h Harness) {
	ex := h.New(t)
	if c := ex.Capabilities(); c.Name == "" {
		t.Errorf("capabilities %+v name no executor", c)
	}
	task, st := start(t, h, ex, h.Forever)
	if st.State != jobs.TaskRunning && st.State != jobs.TaskPending {
		t.Errorf("Start = %+v, want running or pending", st)
	}
	got := waitFor(t, h, ex, st.Handle, "running", running)
	if got.Handle != st.Handle || got.JobID != task.ID {
		t.Errorf("Inspect = handle %q job %q, want %q %q", got.Handle, got.JobID, st.Handle, task.ID)
	}
	for k, v := range task.Labels {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if got.Started.IsZero() || !got.Finished.IsZero() {
		t.Errorf("a running task started %v, finished %v", got.Started, got.Finished)
	}
}

// testStop: a stopped task ends within its grace period (cancelled, or
// exited), and stopping it again is no error.
func testStop(t *testing.T, h Harness) {
	ex := h.New(t)
	_, st := start(t, h, ex, h.Forever)
	waitFor(t, h, ex, st.Handle, "running", running)
	ctx := context.Background()
	if err := ex.Stop(ctx, st.Handle, h.grace()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	got := waitFor(t, h, ex, st.Handle, "ended", ended)
	if got.State != jobs.TaskCancelled && got.State != jobs.TaskExited {
		t.Errorf("a stopped task is %s, want cancelled or exited", got.State)
	}
	if err := ex.Stop(ctx, st.Handle, h.grace()); err != nil {
		t.Errorf("Stop of an ended task: %v", err)
	}
}

// testRemove: a removed task is gone, and removing it again is no error.
func testRemove(t *testing.T, h Harness) {
	ex := h.New(t)
	_, st := start(t, h, ex, h.Exit(0))
	waitFor(t, h, ex, st.Handle, "ended", ended)
	ctx := context.Background()
	if err := ex.Remove(ctx, st.Handle); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := ex.Inspect(ctx, st.Handle); !jobs.IsTaskGone(err) {
		t.Errorf("Inspect of a removed task = %v, want gone", err)
	}
	if err := ex.Remove(ctx, st.Handle); err != nil {
		t.Errorf("Remove of a removed task: %v", err)
	}
	ts, err := ex.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(ts, func(s jobs.TaskStatus) bool { return s.Handle == st.Handle }) {
		t.Errorf("List still has the removed task %s", st.Handle)
	}
}

// testAdopt: an executor opened anew (the agent restarted) lists the
// running task with its job and labels, still running, without starting
// it again.
func testAdopt(t *testing.T, h Harness) {
	ex := h.New(t)
	task, st := start(t, h, ex, h.Forever)
	first := waitFor(t, h, ex, st.Handle, "running", running)
	again := h.Restart(t, ex)
	ts, err := again.List(context.Background())
	if err != nil {
		t.Fatalf("List after a restart: %v", err)
	}
	var mine []jobs.TaskStatus
	for _, s := range ts {
		if s.JobID == task.ID {
			mine = append(mine, s)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("List after a restart has %d tasks of job %s, want 1: %+v", len(mine), task.ID, mine)
	}
	got := mine[0]
	if got.Handle != st.Handle || got.State != jobs.TaskRunning || got.Labels[jobs.LabelOwner] != task.Owner || got.Labels[jobs.LabelName] != task.Name {
		t.Errorf("adopted %+v, want handle %s running with the task's labels", got, st.Handle)
	}
	if !got.Started.Equal(first.Started) {
		t.Errorf("the task started again: %v, was %v", got.Started, first.Started)
	}
	if err := again.Stop(context.Background(), st.Handle, h.grace()); err != nil {
		t.Errorf("Stop from the new executor: %v", err)
	}
	waitFor(t, h, again, st.Handle, "ended", ended)
}

// testEvents: a task's state change (its start, its end) is sent as an
// event naming it.
func testEvents(t *testing.T, h Harness) {
	ex := h.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout())
	defer cancel()
	evs, errs := ex.Events(ctx)
	task, st := start(t, h, ex, h.Forever)
	waitFor(t, h, ex, st.Handle, "running", running)
	if err := ex.Stop(ctx, st.Handle, h.grace()); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatal("the event stream closed")
			}
			if ev.Handle == st.Handle || ev.JobID == task.ID {
				return
			}
		case err := <-errs:
			t.Fatalf("the event stream broke: %v", err)
		case <-ctx.Done():
			t.Fatalf("no event for task %s within %v", st.Handle, h.timeout())
		}
	}
}

// testLogs: the output's last lines, all of it, and a follow that streams
// until the task ends.
func testLogs(t *testing.T, h Harness) {
	ex := h.New(t)
	_, st := start(t, h, ex, h.PrintThenSleep("one", "two", "three"))
	waitFor(t, h, ex, st.Handle, "running", running)
	ctx := context.Background()
	var all []string
	deadline := time.Now().Add(h.timeout())
	for len(all) < 3 && time.Now().Before(deadline) {
		all = readLines(t, ex, ctx, st.Handle, false, 0)
		time.Sleep(20 * time.Millisecond)
	}
	if !slices.Equal(all, []string{"one", "two", "three"}) {
		t.Errorf("all logs %q, want one two three", all)
	}
	if got := readLines(t, ex, ctx, st.Handle, false, 2); !slices.Equal(got, []string{"two", "three"}) {
		t.Errorf("tail 2 %q, want two three", got)
	}
	fctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	rc, err := ex.Logs(fctx, st.Handle, true, 1)
	if err != nil {
		t.Fatalf("Logs follow: %v", err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	if !sc.Scan() || sc.Text() != "three" {
		t.Fatalf("follow from tail 1 began with %q, want three", sc.Text())
	}
	if err := ex.Stop(ctx, st.Handle, h.grace()); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // the stream ends with the task
	}
	if fctx.Err() != nil {
		t.Errorf("a followed stream stayed open after its task ended")
	}
}

func readLines(t *testing.T, ex jobs.Executor, ctx context.Context, handle string, follow bool, tail int) []string {
	t.Helper()
	rc, err := ex.Logs(ctx, handle, follow, tail)
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read logs: %v", err)
	}
	return strings.Fields(string(b))
}

// testExitCodes: a task that exits on its own is exited, with its code.
func testExitCodes(t *testing.T, h Harness) {
	ex := h.New(t)
	for _, code := range []int{0, 3} {
		_, st := start(t, h, ex, h.Exit(code))
		got := waitFor(t, h, ex, st.Handle, "ended", ended)
		if got.State != jobs.TaskExited || got.ExitCode != code || got.Finished.IsZero() {
			t.Errorf("exit %d: %+v, want exited with code %d", code, got, code)
		}
	}
	_, st := start(t, h, ex, h.Print("hello"))
	waitFor(t, h, ex, st.Handle, "ended", ended)
	if got := readLines(t, ex, context.Background(), st.Handle, false, 0); !slices.Equal(got, []string{"hello"}) {
		t.Errorf("output of an ended task %q, want hello", got)
	}
}
