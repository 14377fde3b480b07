package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/slurm"
)

// fakeProcess writes the /proc files of process pid under root that
// slurm.Procs reads: its stat (started at start), cgroup and environment.
func fakeProcess(t *testing.T, root string, pid int, start uint64, cgroup string, env ...string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("%d (python3) S 1 %s%d 0 0", pid, strings.Repeat("0 ", 17), start)
	for name, text := range map[string]string{"stat": stat, "cgroup": cgroup, "environ": strings.Join(env, "\x00")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportCountsSlurmJobs follows a Slurm compute node for an hour, as
// its agent does, through the annotation path: its GPU processes are read
// from a fake /proc (Slurm's cgroups), mapped to the cluster agent's job
// records, the holds recorded, the samples kept. Slurm job 123, launched
// by labpool (alice's train), holds GPUs 0 and 1 idle for 30 minutes;
// Slurm job 77, launched outside labpool, holds GPU 2 busy all hour. The
// report counts both, on the compute node's GPUs, and not the cluster
// agent's own grant of job 123 as well.
func TestReportCountsSlurmJobs(t *testing.T) {
	db := slurmFixture(t)
	ctx := context.Background()
	start := t0.Truncate(time.Minute)
	// The cluster agent's record of job 123, with the GPUs Slurm granted.
	train := trainJob()
	train.Created, train.Started, train.GPUIndexes = start, &start, []int{0, 1}
	putRecord(t, db, clusID, KindJob, train.ID, start, mustJSON(t, train))
	putNode(t, db, compID, NodeRecord{Info: agent.Info{ID: compID, Name: "node1"}})

	proc := t.TempDir()
	fakeProcess(t, proc, 100, 7, "0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0\n", "SLURM_CLUSTER_NAME=hpc", "SLURM_JOB_ID=123")
	fakeProcess(t, proc, 101, 8, "9:devices:/slurm/uid_1000/job_77/step_batch\n")
	procs, index := slurm.NewProcs(proc, "hpc"), NewSlurmJobs(db)
	var holds SlurmHolds
	for m := start; m.Before(start.Add(time.Hour)); m = m.Add(time.Minute) {
		if m.Equal(start.Add(30 * time.Minute)) {
			if err := os.RemoveAll(filepath.Join(proc, "100")); err != nil { // job 123 ends
				t.Fatal(err)
			}
		}
		gs := []gpu.Stats{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"},
			{Index: 2, UUID: "GPU-2", UtilPercent: 100, Processes: []gpu.Process{{PID: 101}}}, {Index: 3, UUID: "GPU-3"}}
		if m.Before(start.Add(30 * time.Minute)) {
			gs[0].Processes, gs[1].Processes = []gpu.Process{{PID: 100}}, []gpu.Process{{PID: 100}}
		}
		var held alloc.Holding
		procs.Annotate(gs, &held, index.Find)
		if g0, g2 := held.GPU("GPU-0"), held.GPU("GPU-2"); m.Equal(start) &&
			(g0.JobID() != train.ID || g0.Scheduler() != "slurm job 123" || g2.JobID() != "" || g2.Scheduler() != "slurm job 77") {
			t.Fatalf("annotated: %+v", held)
		}
		for _, h := range holds.Observe(m, gs, held) {
			putRecord(t, db, compID, KindSlurmHold, h.Key(), m, mustJSON(t, h))
		}
		p := history.FromSample(agent.Sample{Time: m, GPUs: gs, Holding: held})
		p.N = 60
		for i := range p.GPUs {
			p.GPUs[i].N = 60
		}
		putRecord(t, db, compID, history.KindSample1m, history.Key(m), m, history.Encode(p))
	}

	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return start.Add(time.Hour) }
	until := start.Add(time.Hour).Unix()
	byJob, err := r.Report(ctx, ReportRequest{Since: 3600, Until: until, By: ReportByJob})
	if err != nil {
		t.Fatal(err)
	}
	want := []ReportRow{
		{Key: train.ID, Label: "train (slurm job 123)", GPUHoursGranted: 1, GPUHoursUsed: 0, IdleGrantedHours: 1},
		{Key: "slurm job 77", Label: "slurm job 77", GPUHoursGranted: 1, GPUHoursUsed: 1},
	}
	if len(byJob.Rows) != len(want) {
		t.Fatalf("by job: %+v; want %+v", byJob.Rows, want)
	}
	for _, w := range want {
		if !hasRow(byJob.Rows, w) {
			t.Errorf("by job: no row %+v in %+v", w, byJob.Rows)
		}
	}
	byMember, err := r.Report(ctx, ReportRequest{Since: 3600, Until: until, By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []ReportRow{
		{Key: slurmOwnerID, Label: "alice", GPUHoursGranted: 1, IdleGrantedHours: 1},
		{Key: slurmOutside, Label: "Slurm jobs outside labpool", GPUHoursGranted: 1, GPUHoursUsed: 1},
	} {
		if !hasRow(byMember.Rows, w) {
			t.Errorf("by member: no row %+v in %+v", w, byMember.Rows)
		}
	}
}

// hasRow says whether rows hold one with want's key, label and hours.
func hasRow(rows []ReportRow, want ReportRow) bool {
	for _, r := range rows {
		if r.Key == want.Key && r.Label == want.Label && near(r.GPUHoursGranted, want.GPUHoursGranted) &&
			near(r.GPUHoursUsed, want.GPUHoursUsed) && near(r.IdleGrantedHours, want.IdleGrantedHours) && r.UnmeasuredHours < secondHours {
			return true
		}
	}
	return false
}

// secondHours is a second in hours: the window's last second is read at no
// point (a point is read at its last sample, a second before its step ends).
const secondHours = 1.0/3600 + 1e-9

func near(a, b float64) bool { return a-b < secondHours && b-a < secondHours }

// A compute node's hold naming a labpool job that no cluster agent's
// record names charges no member: it counts as a Slurm job outside labpool.
func TestReportSlurmHoldForgedJob(t *testing.T) {
	db := slurmFixture(t)
	start := t0.Truncate(time.Minute)
	end := start.Add(30 * time.Minute)
	h := SlurmHold{Holder: "slurm job 9", Job: "job-plain", Owner: slurmOwnerID, GPUs: []int{0}, Start: start, End: &end}
	putRecord(t, db, compID, KindSlurmHold, h.Key(), end, mustJSON(t, h))
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return start.Add(time.Hour) }
	rep, err := r.Report(context.Background(), ReportRequest{Since: 3600, Until: start.Add(time.Hour).Unix(), By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Key != slurmOutside || !near(rep.Rows[0].GPUHoursGranted, 0.5) {
		t.Errorf("rows %+v; want half an hour outside labpool, none of alice's", rep.Rows)
	}
}

// A compute node's hold of a Slurm job whose cluster agent's record claims
// alice launched it, with no proof of hers, counts under the job but
// charges no member: the report's "(unverified)" row holds it.
func TestReportSlurmHoldUnprovenOwner(t *testing.T) {
	db := slurmFixture(t)
	start := t0.Truncate(time.Minute)
	end := start.Add(30 * time.Minute)
	for i, job := range []string{"job-noproof", "job-copied", biggerJob().ID} {
		h := SlurmHold{Holder: fmt.Sprintf("slurm job %d", 126+i), Job: job, Owner: slurmOwnerID, GPUs: []int{i}, Start: start, End: &end}
		putRecord(t, db, compID, KindSlurmHold, h.Key(), end, mustJSON(t, h))
	}
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return start.Add(time.Hour) }
	rep, err := r.Report(context.Background(), ReportRequest{Since: 3600, Until: start.Add(time.Hour).Unix(), By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Key != UnverifiedOwner || !near(rep.Rows[0].GPUHoursGranted, 1.5) {
		t.Errorf("rows %+v; want 1.5 GPU hours unverified, none of alice's", rep.Rows)
	}
}

func TestSlurmHoldsObserve(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	// held is a sample of gpus held by slurm job 5, which runs labpool's
	// job ("": none).
	type sample struct {
		gs   []gpu.Stats
		held alloc.Holding
	}
	held := func(job string, gpus ...int) sample {
		var s sample
		for _, i := range gpus {
			uuid := fmt.Sprintf("GPU-%d", i)
			s.gs = append(s.gs, gpu.Stats{Index: i, UUID: uuid})
			s.held.HoldGPU(uuid, alloc.Holder{Kind: alloc.SlurmJob, ID: "5", Name: "slurm job 5", Job: job})
		}
		return s
	}
	var hs SlurmHolds
	type rec struct {
		gpus  string
		start int
		end   int // -1: open
		job   string
	}
	got := func(out []SlurmHold) []rec {
		var rs []rec
		for _, h := range out {
			r := rec{gpus: fmt.Sprint(h.GPUs), start: int(h.Start.Sub(t0) / time.Minute), end: -1, job: h.Job}
			if h.End != nil {
				r.end = int(h.End.Sub(t0) / time.Minute)
			}
			rs = append(rs, r)
		}
		return rs
	}
	steps := []struct {
		m    int
		s    sample
		want []rec
	}{
		{0, held("", 1, 0), []rec{{"[0 1]", 0, -1, ""}}},
		{1, held("", 0, 1), nil},
		{2, held("job-a", 0, 1), []rec{{"[0 1]", 0, -1, "job-a"}}},
		{3, held("job-a", 0, 1, 2), []rec{{"[0 1]", 0, 3, "job-a"}, {"[0 1 2]", 3, -1, "job-a"}}},
		{4, sample{}, []rec{{"[0 1 2]", 3, 4, "job-a"}}},
		{5, sample{}, nil},
	}
	for _, s := range steps {
		if g := got(hs.Observe(at(s.m), s.s.gs, s.s.held)); fmt.Sprint(g) != fmt.Sprint(s.want) {
			t.Errorf("minute %d: %v; want %v", s.m, g, s.want)
		}
	}
	// An earlier run's open record: continued while held, ended when not.
	var again SlurmHolds
	again.Adopt([]SlurmHold{{Holder: "slurm job 5", GPUs: []int{0}, Start: at(0)}})
	if h := held("", 0); len(again.Observe(at(9), h.gs, h.held)) != 0 {
		t.Errorf("adopted and still held: a record written")
	}
	if out := got(again.Observe(at(10), nil, alloc.Holding{})); fmt.Sprint(out) != fmt.Sprint([]rec{{"[0]", 0, 10, ""}}) {
		t.Errorf("adopted, then gone: %v", out)
	}
}
