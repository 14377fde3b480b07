package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// recorded is a Runner that answers from recorded output and counts the
// commands it was asked to run.
type recorded struct {
	mu     sync.Mutex
	out    map[string][]byte // by command name
	calls  []string
	failOn string
	errOn  map[string]string // an error message by command name
}

func (r *recorded) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name+" "+strings.Join(args, " "))
	if msg, ok := r.errOn[name]; ok {
		return nil, fmt.Errorf("%s: %s", name, msg)
	}
	if name == r.failOn {
		return nil, fmt.Errorf("%s: slurm_load_jobs error: Unable to contact slurm controller", name)
	}
	b, ok := r.out[name]
	if ok && name == "squeue" && len(args) > 0 && args[0] != "--json" {
		return squeueAsText(b, args)
	}
	if ok {
		return b, nil
	}
	return nil, nil
}

// RunAs runs name as Run does, recording the account first ("as USER:").
func (r *recorded) RunAs(ctx context.Context, as As, name string, args ...string) ([]byte, error) {
	r.mu.Lock()
	r.calls = append(r.calls, "as "+as.User+":")
	r.mu.Unlock()
	return r.Run(ctx, name, args...)
}

func (r *recorded) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func recordedExecutor(t *testing.T, squeue string) (*Executor, *recorded, *fakeClock) {
	t.Helper()
	r := &recorded{out: map[string][]byte{
		"squeue":   readFixture(t, squeue),
		"sinfo":    readFixture(t, "sinfo-23.11-v0.0.40.json"),
		"scontrol": readFixture(t, "scontrol-partition-22.05.txt"),
	}}
	clock := &fakeClock{t: time.Unix(1795600200, 0)}
	e, err := New(context.Background(), fakeConfig(privateDir(t), r, clock))
	if err != nil {
		t.Fatal(err)
	}
	recordFixture(t, e, squeue, "lab")
	return e, r, clock
}

// fakeConfig is an executor's configuration on a fake runner: the jobs'
// account is nobody (a real user here, never the test's own).
func fakeConfig(dir string, r AsRunner, clock *fakeClock) Config {
	return Config{StateDir: dir, Runner: r, JobUser: "nobody", Containers: []string{}, Now: clock.now}
}

// privateDir is a new directory of the test's, closed to job accounts
// (t.TempDir makes it 0755).
func privateDir(t testing.TB) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// recordFixture gives e a record of each labpool job of user in the
// squeue fixture, as if e had submitted them as user.
func recordFixture(t testing.TB, e *Executor, fixture, user string) {
	t.Helper()
	_, list, err := ParseSqueue(readFixture(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	recordJobs(t, e, list, user)
}

// recordJobs gives e a record of each labpool job of user in list.
func recordJobs(t testing.TB, e *Executor, list []Job, user string) {
	t.Helper()
	for _, j := range list {
		if j.LabpoolJob == "" || j.User != user {
			continue
		}
		r := &record{Handle: j.ID, JobID: j.LabpoolJob, Owner: j.Owner, User: user,
			Output: filepath.Join(t.TempDir(), "slurm-"+j.ID+".out"), Submitted: j.Submitted,
			Last: jobs.TaskStatus{Handle: j.ID, JobID: j.LabpoolJob, State: jobs.TaskPending}}
		if err := e.save(r); err != nil {
			t.Fatal(err)
		}
		e.recs[j.ID] = r
	}
}

// TestOneSqueuePerTick: every reader within a tick shares one squeue;
// the card's full read serves the others too.
func TestOneSqueuePerTick(t *testing.T) {
	e, r, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx := context.Background()
	for range 3 {
		if _, err := e.ReadCluster(ctx); err != nil {
			t.Fatal(err)
		}
		list, err := e.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range list {
			if _, err := e.Inspect(ctx, st.Handle); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := r.count("squeue"); n != 1 {
		t.Errorf("%d squeue calls in one tick, want 1", n)
	}
	clock.add(time.Second)
	for range 3 {
		if _, err := e.List(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.count("squeue"); n != 2 {
		t.Errorf("%d squeue calls after a tick, want 2", n)
	}
	if n := r.count("squeue --noheader --states=all --Format="); n != 2 || !strings.HasSuffix(r.calls[len(r.calls)-1], " --user=nobody,lab") {
		t.Errorf("the tick's own read is not filtered by user: %q", r.calls)
	}
}

// TestListFromRecords: the agent lists the jobs it recorded, as squeue
// shows them, and only those.
func TestListFromRecords(t *testing.T) {
	e, _, _ := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	list, err := e.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range list {
		got = append(got, st.Handle+":"+st.JobID+":"+string(st.State))
	}
	want := "101:j101:running 102:j102:pending 103:j103:exited 104:j104:exited 105:j105:cancelled 106:j106:timed_out 107:j107:exited 108:j108:failed 109:j109:running"
	if strings.Join(got, " ") != want {
		t.Errorf("List = %s\nwant   %s", strings.Join(got, " "), want)
	}
	st, _ := e.Inspect(context.Background(), "101")
	if strings.Join(st.Hosts, ",") != "gpu01,gpu02" || st.Addr != "gpu01" && st.Addr != "10.1.0.1" {
		t.Errorf("job 101 hosts %v addr %q", st.Hosts, st.Addr)
	}
}

// TestNotLabpoolsJob: a job of another user, even with a forged marker,
// and a job of the agent's user without a marker are neither listed,
// inspected, stopped, removed nor read.
func TestNotLabpoolsJob(t *testing.T) {
	e, r, _ := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx := context.Background()
	for _, h := range []string{"110", "111"} { // mallory's, marker forged / malformed
		if _, err := e.Inspect(ctx, h); !jobs.IsTaskGone(err) {
			t.Errorf("Inspect(%s) = %v, want gone", h, err)
		}
		if err := e.Stop(ctx, h, 0); err == nil {
			t.Errorf("Stop(%s) accepted", h)
		}
		if err := e.Remove(ctx, h); err != nil {
			t.Errorf("Remove(%s) = %v, want nothing done", h, err)
		}
		if _, err := e.Logs(ctx, h, false, 0); err == nil {
			t.Errorf("Logs(%s) accepted", h)
		}
	}
	for _, h := range []string{"../../etc/passwd", "1;reboot", "", "-1"} {
		if _, err := e.Logs(ctx, h, false, 0); err == nil {
			t.Errorf("Logs(%q) accepted", h)
		}
		if err := e.Stop(ctx, h, 0); err == nil {
			t.Errorf("Stop(%q) accepted", h)
		}
	}
	if n := r.count("scancel"); n != 0 {
		t.Errorf("scancel ran %d times", n)
	}
	// A job of a job account that the agent never recorded is not
	// labpool's, whatever its comment says.
	e.mu.Lock()
	e.cfg.JobUser = "mallory" // job 110 is mallory's, with a labpool comment
	e.q.last = nil
	e.mu.Unlock()
	if err := e.Stop(ctx, "110", 0); err == nil || !strings.Contains(err.Error(), "not submitted by this agent") {
		t.Errorf("Stop(110) = %v, want a refusal naming the rule", err)
	}
}

// TestForgedCommentNotAdopted: a job of a job account that writes a
// labpool comment naming another member's job (sbatch
// --comment=labpool:job=VICTIM,owner=...) is not adopted by an agent
// that did not submit it, fresh or restarted: the jobs manager never
// sees two claimants of the victim's job.
func TestForgedCommentNotAdopted(t *testing.T) {
	ctx := context.Background()
	r := &recorded{out: map[string][]byte{"squeue": readFixture(t, "squeue-23.11-v0.0.40.json")}}
	clock := &fakeClock{t: time.Unix(1795600200, 0)}
	e := mustNew(t, fakeConfig(privateDir(t), r, clock))
	_, all, err := ParseSqueue(r.out["squeue"])
	if err != nil {
		t.Fatal(err)
	}
	// The agent submitted job 101 (j101) as lab alone; every other
	// labpool comment of lab's jobs is forged.
	recordJobs(t, e, all[:1], "lab")
	if all[0].ID != "101" {
		t.Fatalf("fixture's first job is %s", all[0].ID)
	}
	for _, ex := range []*Executor{e, mustNew(t, e.cfg)} {
		list, err := ex.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range list {
			got = append(got, st.Handle+":"+st.JobID)
		}
		if strings.Join(got, " ") != "101:j101" {
			t.Errorf("List = %v, want only the job the agent submitted (101:j101)", got)
		}
		for _, h := range []string{"102", "109"} {
			if _, err := ex.Inspect(ctx, h); !jobs.IsTaskGone(err) {
				t.Errorf("Inspect(%s) = %v, want gone: a comment is no proof", h, err)
			}
			if err := ex.Stop(ctx, h, 0); err == nil || !strings.Contains(err.Error(), "not submitted by this agent") {
				t.Errorf("Stop(%s) = %v, want a refusal naming the rule", h, err)
			}
		}
	}
	if n := r.count("scancel"); n != 0 {
		t.Errorf("scancel ran %d times", n)
	}
}

func mustNew(t testing.TB, cfg Config) *Executor {
	t.Helper()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRemoveRunningRefused(t *testing.T) {
	e, _, _ := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	if err := e.Remove(context.Background(), "101"); err == nil || !strings.Contains(err.Error(), "only an ended job is removed") {
		t.Errorf("Remove(running) = %v", err)
	}
	if err := e.Remove(context.Background(), "103"); err != nil {
		t.Errorf("Remove(ended) = %v", err)
	}
}

// TestReadClusterKeepsLastGood: a failed read shows the last figures
// with the error.
func TestReadClusterKeepsLastGood(t *testing.T) {
	e, r, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx := context.Background()
	good, err := e.ReadCluster(ctx)
	if err != nil || len(good.Nodes) != 4 {
		t.Fatalf("ReadCluster = %d nodes, %v", len(good.Nodes), err)
	}
	r.failOn = "sinfo"
	clock.add(time.Second)
	bad, err := e.ReadCluster(ctx)
	if err == nil || len(bad.Nodes) != 4 || !strings.Contains(bad.Error, "Unable to contact") {
		t.Errorf("failed read = %d nodes, error %q, %v", len(bad.Nodes), bad.Error, err)
	}
}

func TestEventsDiff(t *testing.T) {
	prev := map[string]taskKey{
		"1": {JobID: "a", State: jobs.TaskPending, Reason: "Resources"},
		"2": {JobID: "b", State: jobs.TaskRunning},
		"3": {JobID: "c", State: jobs.TaskRunning},
	}
	now := []jobs.TaskStatus{
		{Handle: "1", JobID: "a", State: jobs.TaskRunning},
		{Handle: "2", JobID: "b", State: jobs.TaskRunning},
		{Handle: "4", JobID: "d", State: jobs.TaskPending},
	}
	var got []string
	for _, ev := range diff(prev, now, time.Time{}) {
		got = append(got, ev.Handle+":"+ev.Action)
	}
	if strings.Join(got, " ") != "1:state 4:state 3:destroy" {
		t.Errorf("events = %v", got)
	}
}

func TestSqueueFailure(t *testing.T) {
	e, r, _ := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	r.failOn = "squeue"
	_, err := e.List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Errorf("List = %v, want squeue's stderr", err)
	}
	if errors.Is(err, jobs.ErrTaskGone) {
		t.Error("a failed squeue reads as gone")
	}
}

// squeueAsText answers the poll's text squeue (state lines or full
// records) from a JSON fixture, with the markers its arguments name.
func squeueAsText(jsonOut []byte, args []string) ([]byte, error) {
	m := markersOf(args)
	_, list, err := ParseSqueue(jsonOut)
	if err != nil {
		return nil, err
	}
	return renderFor(list, args, m), nil
}

// renderFor prints list as squeue does with args: filtered by --user and
// --jobs, as state lines or full records.
func renderFor(list []Job, args []string, m textMarkers) []byte {
	for _, a := range args {
		var keep func(Job) bool
		if u, ok := strings.CutPrefix(a, "--user="); ok { // slurmctld's filter
			users := strings.Split(u, ",")
			keep = func(j Job) bool { return slices.Contains(users, j.User) }
		}
		if ids, ok := strings.CutPrefix(a, "--jobs="); ok {
			set := strings.Split(ids, ",")
			keep = func(j Job) bool { return slices.Contains(set, j.ID) }
		}
		if keep == nil {
			continue
		}
		var kept []Job
		for _, j := range list {
			if keep(j) {
				kept = append(kept, j)
			}
		}
		list = kept
	}
	if stateLines(args) {
		return renderStateText(list, m)
	}
	return renderText(list, m)
}

// stateLines says whether args ask for state lines.
func stateLines(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--Format=JobID:|,State:|,Reason:") })
}

// markersOf reads the markers out of the poll's arguments.
func markersOf(args []string) textMarkers {
	var m textMarkers
	format := ""
	for _, a := range args {
		if f, ok := strings.CutPrefix(a, "--Format="); ok {
			format = f
		}
	}
	for _, f := range strings.Split(format, ",") {
		switch {
		case strings.HasPrefix(f, "Reason:"):
			m.Reason = f[len("Reason:"):]
		case strings.HasPrefix(f, "Name:"):
			m.Name = f[len("Name:"):]
		case strings.HasPrefix(f, "Comment:"):
			m.Comment = f[len("Comment:"):]
		}
	}
	if stateLines(args) { // the state line's reason ends with the comment's marker
		m.Comment, m.Reason = m.Reason, ""
	}
	return m
}

// TestVanished: a job of labpool's that left squeue is asked of
// scontrol; its end is kept once known; a job both forgot reads as lost;
// a scontrol that does not answer changes nothing.
func TestVanished(t *testing.T) {
	ctx := context.Background()
	addRecord := func(e *Executor, h string) {
		r := &record{Handle: h, JobID: "j" + h, Owner: "DEV1", User: "root", Output: filepath.Join(t.TempDir(), "slurm-"+h+".out"),
			Last: jobs.TaskStatus{Handle: h, JobID: "j" + h, State: jobs.TaskRunning}}
		if err := e.save(r); err != nil {
			t.Fatal(err)
		}
		e.recs[h] = r
	}

	e, r, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	r.out["scontrol"] = readFixture(t, "scontrol-job-22.05-failed.txt")
	addRecord(e, "4")
	st, err := e.Inspect(ctx, "4")
	if err != nil || st.State != jobs.TaskExited || st.ExitCode != 3 || st.JobID != "j4" {
		t.Fatalf("Inspect = %+v, %v; want exited 3", st, err)
	}
	asked := r.count("scontrol show job")
	clock.add(time.Second)
	again, err := New(ctx, e.cfg) // a restarted agent reads the kept end
	if err != nil {
		t.Fatal(err)
	}
	st, err = again.Inspect(ctx, "4")
	if err != nil || st.State != jobs.TaskExited || st.ExitCode != 3 || r.count("scontrol show job") != asked {
		t.Errorf("after restart: %+v, %v; scontrol asked %d times, want %d", st, err, r.count("scontrol show job"), asked)
	}

	e, r, _ = recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	r.errOn = map[string]string{"scontrol": "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"}
	addRecord(e, "77")
	if st, err := e.Inspect(ctx, "77"); err != nil || st.State != jobs.TaskRunning {
		t.Errorf("scontrol down: %+v, %v; want the last status", st, err)
	}
	r.errOn = map[string]string{"scontrol": "slurm_load_jobs error: Invalid job id specified"}
	st, err = e.Inspect(ctx, "77")
	if err != nil || st.State != jobs.TaskFailed || st.ExitCode != -1 || st.Reason != lostReason {
		t.Errorf("forgotten: %+v, %v", st, err)
	}
}

// TestEventsEnd: the event stream closes both channels once ctx ends.
func TestEventsEnd(t *testing.T) {
	e, _, _ := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx, cancel := context.WithCancel(context.Background())
	evs, errs := e.Events(ctx)
	cancel()
	for range evs {
	}
	if _, ok := <-errs; ok {
		t.Error("the error channel stays open")
	}
}

// TestRemoveTombstone: a removed job is gone (Inspect, List, a second
// Remove is no error) while squeue still lists it, also for an agent
// restarted; its tombstone goes when Slurm forgets the job.
func TestRemoveTombstone(t *testing.T) {
	ctx := context.Background()
	e, r, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	if _, err := e.List(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Remove(ctx, "103"); err != nil {
		t.Fatal(err)
	}
	check := func(ex *Executor, when string) {
		if _, err := ex.Inspect(ctx, "103"); !jobs.IsTaskGone(err) {
			t.Errorf("%s: Inspect = %v, want gone", when, err)
		}
		list, err := ex.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range list {
			if st.Handle == "103" {
				t.Errorf("%s: List has the removed job", when)
			}
		}
		if err := ex.Remove(ctx, "103"); err != nil {
			t.Errorf("%s: second Remove = %v", when, err)
		}
	}
	check(e, "removed")
	again, err := New(ctx, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	check(again, "restarted")
	// Slurm forgets the job: the tombstone goes.
	r.out["squeue"] = readFixture(t, "squeue-24.05-v0.0.41.json") // jobs 101-103 ...
	r.out["squeue"] = []byte(strings.Replace(string(r.out["squeue"]), `"job_id": 103`, `"job_id": 999103`, 1))
	clock.add(time.Second)
	if _, err := again.List(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(again.recordPath("103")); !os.IsNotExist(err) {
		t.Errorf("the tombstone stays after Slurm forgot the job: %v", err)
	}
}

// TestConcurrentReaders runs every reader at once, with a clock that
// moves (run with -race).
func TestConcurrentReaders(t *testing.T) {
	e, _, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, _ := e.Events(ctx)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				switch i % 4 {
				case 0:
					_, _ = e.List(ctx)
				case 1:
					_, _ = e.Inspect(ctx, "101")
				case 2:
					_, _ = e.ReadCluster(ctx)
				case 3:
					_ = e.Remove(ctx, "104")
					clock.add(300 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	cancel()
	for range evs {
	}
}
