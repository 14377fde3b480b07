package slurm

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStateLines: after the first read, a tick reads the state lines
// alone; a job whose line did not change keeps its fields with no second
// squeue; a changed reason comes from the line; a job that changed state
// or is new is read in full by one more squeue that names only those
// jobs; a job that left is gone.
func TestStateLines(t *testing.T) {
	e, r, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx := context.Background()
	tick := func(wantCalls int) (*snapshot, []string) {
		t.Helper()
		before := len(r.calls)
		clock.add(time.Second)
		s, err := e.q.get(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		calls := r.calls[before:]
		if len(calls) != wantCalls {
			t.Fatalf("%d squeue calls, want %d: %q", len(calls), wantCalls, calls)
		}
		return s, calls
	}
	first, calls := tick(1)
	if stateLines(strings.Fields(calls[0])) || len(first.Jobs) != 9 {
		t.Fatalf("first read = %q, %d jobs; want every job in full", calls[0], len(first.Jobs))
	}
	same, calls := tick(1)
	if !stateLines(strings.Fields(calls[0])) || !strings.HasSuffix(calls[0], " --user=nobody,lab") {
		t.Errorf("a later tick reads %q, want the user's state lines", calls[0])
	}
	if same.Gen != first.Gen || same.Jobs["102"].Name != "wait-for-gpus" {
		t.Errorf("an unchanged queue made a new snapshot: gen %d, was %d", same.Gen, first.Gen)
	}

	fixture := string(r.out["squeue"])
	r.out["squeue"] = []byte(strings.Replace(fixture, `"state_reason": "Resources"`, `"state_reason": "Priority"`, 1))
	reason, _ := tick(1)
	if j := reason.Jobs["102"]; reason.Gen == same.Gen || j.Reason != "Priority" || j.Name != "wait-for-gpus" {
		t.Errorf("after a new reason: gen %d (was %d), job 102 %+v", reason.Gen, same.Gen, j)
	}

	fixture = strings.Replace(fixture, `"job_id": 105,`, `"job_id": 205,`, 1) // 105 leaves, 205 comes
	fixture = strings.Replace(fixture, `"state_reason": "Resources"`, `"state_reason": "None"`, 1)
	r.out["squeue"] = []byte(strings.Replace(fixture, `"job_state": [
        "PENDING"`, `"job_state": [
        "RUNNING"`, 1)) // 102 starts
	changed, calls := tick(2)
	if !strings.HasSuffix(calls[1], " --user=nobody,lab --jobs=102,205") || stateLines(strings.Fields(calls[1])) {
		t.Errorf("the second read = %q, want the full records of 102 and 205", calls[1])
	}
	if changed.Jobs["102"].State != "RUNNING" || changed.Jobs["205"].ID != "205" || len(changed.Jobs) != 9 {
		t.Errorf("after 102 started, 105 left and 205 came: %d jobs, 102 %q, 205 %q", len(changed.Jobs), changed.Jobs["102"].State, changed.Jobs["205"].ID)
	}
	if _, ok := changed.Jobs["105"]; ok {
		t.Error("job 105 left squeue but stays in the snapshot")
	}
}

// TestStateLinesLeftBetween: a job that changed state and left Slurm
// before its full read ("Invalid job id" for a single job) is gone, not
// an error.
func TestStateLinesLeftBetween(t *testing.T) {
	e, r, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx := context.Background()
	if _, err := e.q.get(ctx, false); err != nil {
		t.Fatal(err)
	}
	r.out["squeue"] = []byte(strings.Replace(string(r.out["squeue"]), `"job_state": [
        "PENDING"`, `"job_state": [
        "RUNNING"`, 1))
	full := RunnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if strings.HasPrefix(args[len(args)-1], "--jobs=") {
			return nil, errorString("squeue: slurm_load_jobs error: Invalid job id specified")
		}
		return r.Run(ctx, name, args...)
	})
	e.q.run = full
	clock.add(time.Second)
	s, err := e.q.get(ctx, false)
	if err != nil {
		t.Fatalf("read = %v, want no error", err)
	}
	if _, ok := s.Jobs["102"]; ok || len(s.Jobs) != 8 {
		t.Errorf("the job that left is listed: %d jobs", len(s.Jobs))
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestParseStateLines: state lines are read in place; a line that is not
// a job's is skipped; the old markers are text to a later call.
func TestParseStateLines(t *testing.T) {
	m := fixedMarkers
	out := []byte("1|RUNNING|None~00E\n2|PENDING|Resources~00E\nx|RUNNING|None~00E\n3|running|None~00E\n4|PENDING|Priority~11E\n")
	got := parseStateLines(nil, out, m)
	var lines []string
	for _, l := range got {
		lines = append(lines, string(l.id)+" "+string(l.state)+" "+string(l.reason))
	}
	if want := "1 RUNNING |2 PENDING Resources"; strings.Join(lines, "|") != want {
		t.Errorf("parseStateLines = %q, want %q", strings.Join(lines, "|"), want)
	}
	if n := testing.AllocsPerRun(100, func() { got = parseStateLines(got[:0], out, m) }); n > 1 {
		t.Errorf("parseStateLines allocates %v times, want at most 1", n)
	}
}

// TestStepSkipsUnchanged: the event loop's tick lists nothing when the
// queue and the records did not change (no scontrol for node addresses
// either), and still sends a change within the tick that reads it: a
// new state, a removed job.
func TestStepSkipsUnchanged(t *testing.T) {
	e, r, clock := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	ctx := context.Background()
	var w watch
	step := func() []string {
		t.Helper()
		clock.add(time.Second)
		s, err := e.q.get(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range e.step(ctx, &w, s) {
			got = append(got, ev.Handle+":"+ev.Action)
		}
		return got
	}
	if evs := step(); len(evs) != 0 {
		t.Errorf("first tick sent %v, want nothing", evs)
	}
	if evs := step(); len(evs) != 0 { // the records the first tick adopted
		t.Errorf("second tick sent %v, want nothing", evs)
	}
	asked := r.count("scontrol")
	if evs := step(); len(evs) != 0 || r.count("scontrol") != asked {
		t.Errorf("an unchanged tick sent %v and ran scontrol %d times", evs, r.count("scontrol")-asked)
	}
	r.out["squeue"] = []byte(strings.Replace(string(r.out["squeue"]), `"job_state": [
        "PENDING"`, `"job_state": [
        "RUNNING"`, 1))
	if evs := step(); strings.Join(evs, " ") != "102:state" {
		t.Errorf("after 102 started: %v, want 102:state", evs)
	}
	if err := e.Remove(ctx, "103"); err != nil {
		t.Fatal(err)
	}
	if evs := step(); strings.Join(evs, " ") != "103:destroy" {
		t.Errorf("after removing 103: %v, want 103:destroy", evs)
	}
}
