package app

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// clusterReplica is a replica with a cluster agent (clusID) standing for
// a cluster of 8 GPUs, mike a member, and the cluster jobs js (each proven
// by mike and written by the agent), at now.
func clusterReplica(t *testing.T, now time.Time, js ...jobs.Job) (*Reader, string) {
	t.Helper()
	db := openDB(t)
	mike, mikeID := memberKey(4)
	putMember(t, db, mikeID, "mike", false)
	putMember(t, db, clusID, "hpc-login", false)
	putNode(t, db, clusID, NodeRecord{Info: agent.Info{ID: clusID, Name: "hpc-login"},
		Cluster: &slurm.Cluster{Name: "HPC", GPUs: []slurm.GPUCount{{Type: "a100", Total: 6}, {Type: "v100", Total: 2}}}})
	for _, j := range js {
		j.Node, j.Executor = clusID, "slurm"
		j = proven(t, mike, mikeID, clusID, j)
		putRecord(t, db, clusID, KindJob, j.ID, now, mustJSON(t, j))
	}
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return now }
	return r, mikeID
}

// A running 2-GPU cluster job counts 2 GPU-hours an hour: in Jobs, and in
// the report by member, node, job and GPU (the cluster's GPUs are one row,
// "NODE:cluster": the report has no sample of them, so they are granted
// and unmeasured).
func TestClusterJobCounts(t *testing.T) {
	now := t0.Truncate(time.Hour)
	started := now.Add(-time.Hour)
	r, mikeID := clusterReplica(t, now, jobs.Job{Name: "sweep", Container: "123", State: jobs.Running, Started: &started,
		Spec: jobs.Spec{GPUs: 2}})
	ctx := context.Background()
	js, err := r.Jobs(ctx, false)
	if err != nil || len(js) != 1 || js[0].GPUWeight != 2 || js[0].GPUSeconds != 7200 {
		t.Fatalf("Jobs = %+v, %v; want the job at 2 GPUs, 7200 GPU-seconds", js, err)
	}
	for _, c := range []struct{ by, key string }{
		{ReportByMember, mikeID}, {ReportByNode, clusID}, {ReportByJob, js[0].ID}, {ReportByGPU, clusID + ":cluster"},
	} {
		rep, err := r.Report(ctx, ReportRequest{Since: 24 * 3600, By: c.by})
		if err != nil || len(rep.Rows) != 1 || rep.Rows[0].Key != c.key {
			t.Errorf("by %s: %+v, %v; want one row %s", c.by, rep.Rows, err, c.key)
			continue
		}
		row := rep.Rows[0]
		if math.Abs(row.GPUHoursGranted-2) > 1e-9 || math.Abs(row.UnmeasuredHours-2) > 1e-9 || rep.Totals.GPUHoursGranted != row.GPUHoursGranted {
			t.Errorf("by %s: %+v (totals %+v), want 2 GPU-hours granted, unmeasured", c.by, row, rep.Totals)
		}
	}
}

// Attack: the cluster's agent writes a job of mike's (his signed spec
// asks it) claiming 1,000 nodes of 8 GPUs, and one whose nodes × GPUs
// overflow an int, on a cluster of 8: each counts the cluster's 8 GPUs at
// most, and the report names the rule.
func TestClusterJobClaimingMoreGPUs(t *testing.T) {
	now := t0.Truncate(time.Hour)
	started, ended := now.Add(-2*time.Hour), now.Add(-time.Hour)
	r, mikeID := clusterReplica(t, now,
		jobs.Job{Name: "huge", Container: "1", State: jobs.Exited, Started: &started, Finished: &ended, Spec: jobs.Spec{Nodes: 1000, GPUsPerNode: 8}},
		jobs.Job{Name: "wrap", Container: "2", State: jobs.Exited, Started: &started, Finished: &ended, Spec: jobs.Spec{Nodes: math.MaxInt, GPUsPerNode: math.MaxInt}},
		jobs.Job{Name: "neg", Container: "3", State: jobs.Exited, Started: &started, Finished: &ended, Spec: jobs.Spec{GPUs: -5}})
	rep, err := r.Report(context.Background(), ReportRequest{Since: 24 * 3600, By: ReportByMember})
	if err != nil || len(rep.Rows) != 1 || rep.Rows[0].Key != mikeID || math.Abs(rep.Rows[0].GPUHoursGranted-16) > 1e-9 {
		t.Fatalf("report %+v, %v; want mike's 2 jobs at the cluster's 8 GPUs for an hour each: 16 GPU-hours", rep.Rows, err)
	}
	if rep.AdjustedCount != 2 || len(rep.Adjusted) != 2 || slices.ContainsFunc(rep.Adjusted, func(a ReportAdjustment) bool { return a.Rule != RuleClusterGPUs }) {
		t.Errorf("adjusted %+v (%d), want 2 naming %q", rep.Adjusted, rep.AdjustedCount, RuleClusterGPUs)
	}
	js, err := r.Jobs(context.Background(), true)
	if err != nil || len(js) != 3 {
		t.Fatalf("Jobs = %+v, %v", js, err)
	}
	for _, j := range js {
		if j.GPUWeight > 8 || j.GPUSeconds > 8*3600 || j.GPUSeconds < 0 {
			t.Errorf("job %s: %v GPUs, %v GPU-seconds; want at most the cluster's 8 GPUs", j.Name, j.GPUWeight, j.GPUSeconds)
		}
	}
}

// A job of a machine that stands for no cluster, claiming to be a Slurm
// job, holds none of a cluster's GPUs.
func TestSlurmJobOfNoCluster(t *testing.T) {
	db := openDB(t)
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	now := t0.Truncate(time.Hour)
	started := now.Add(-time.Hour)
	j := jobs.Job{ID: "job-1", Name: "x", Node: alphaID, Owner: alphaID, Executor: "slurm", Container: "9", State: jobs.Running,
		Started: &started, Spec: jobs.Spec{GPUs: 64}}
	putRecord(t, db, alphaID, KindJob, j.ID, now, mustJSON(t, j))
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return now }
	rep, err := r.Report(context.Background(), ReportRequest{Since: 3600, By: ReportByJob})
	if err != nil || len(rep.Rows) != 0 {
		t.Errorf("report %+v, %v; want no row", rep.Rows, err)
	}
}

// The pool's GPUs over time stack the cluster's too, so that they add up
// to the header's count (each machine's GPUs and each cluster's): self's
// 2 GPUs sampled, the cluster's 8 held by mike's 2-GPU job (its queue
// lists it too: counted once) and 3 by a job outside labpool its queue
// shows running (whose comment names a labpool job the agent has no record
// of), the other 3 free. Attack: a job claiming 8,000 of the cluster's GPUs
// holds at most its 8.
func TestPoolHistoryCountsClusters(t *testing.T) {
	now := t0
	started := now.Add(-time.Hour)
	for _, c := range []struct {
		name       string
		spec       jobs.Spec
		held, free float64
	}{
		{"2 GPUs", jobs.Spec{GPUs: 2}, 5, 3},
		{"8000 GPUs", jobs.Spec{Nodes: 1000, GPUsPerNode: 8}, 8, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := clusterReplica(t, now, jobs.Job{Name: "sweep", Container: "123", State: jobs.Running, Started: &started, Spec: c.spec})
			js, err := r.Jobs(context.Background(), false)
			if err != nil || len(js) != 1 {
				t.Fatalf("Jobs = %+v, %v", js, err)
			}
			jobID := js[0].ID // the queue lists it too: counted once
			putNode(t, r.db, clusID, NodeRecord{Info: agent.Info{ID: clusID, Name: "hpc-login"}, Cluster: &slurm.Cluster{Name: "HPC",
				GPUs: []slurm.GPUCount{{Type: "a100", Total: 6}, {Type: "v100", Total: 2}},
				Queue: []slurm.QueueJob{{ID: "77", State: "RUNNING", GPUs: 3, Started: now.Add(-10 * time.Minute), LabpoolJob: "job-forged"},
					{ID: "78", State: "PENDING", GPUs: 8}, {ID: "123", State: "RUNNING", GPUs: 2, Started: started, LabpoolJob: jobID}}}})
			recordSeconds(t, history.NewRecorder(r.db, selfID, slog.New(slog.DiscardHandler)), now.Add(-2*time.Second), now, 2, nil)
			ps, err := r.PoolHistory(context.Background(), 3600)
			if err != nil || len(ps.Times) != 2 || len(ps.ClusterHeld) != 2 || len(ps.ClusterFree) != 2 {
				t.Fatalf("pool history %+v, %v", ps, err)
			}
			for i := range ps.Times {
				machines := ps.Busy[i] + ps.IdleGranted[i] + ps.Free[i]
				if machines != 2 || ps.ClusterHeld[i] != c.held || ps.ClusterFree[i] != c.free {
					t.Errorf("point %d: machines %v, cluster held %v free %v; want 2, %v, %v", i, machines, ps.ClusterHeld[i], ps.ClusterFree[i], c.held, c.free)
				}
			}
		})
	}
}

// A cluster job whose compute nodes report what it held (SlurmHold) counts
// there, measured, and not also as its agent's unmeasured cluster GPUs.
func TestClusterJobCountedOnceWithHolds(t *testing.T) {
	now := t0.Truncate(time.Hour)
	js := heldOnNodes([]reportJob{
		{ID: "job-1", Node: clusID, Cluster: 2, Start: now},
		{ID: "job-1", Node: compID, GPUs: []int{0, 1}, Start: now, Holder: "slurm job 123"},
		{ID: "job-2", Node: clusID, Cluster: 4, Start: now},
	})
	if len(js) != 2 || js[0].Holder == "" || js[1].ID != "job-2" || js[1].Cluster != 4 {
		t.Errorf("held on nodes: %+v; want job-1's hold and job-2's cluster grant", js)
	}
}

// A cluster's size is its GPUs by type, or node by node where the agent
// read no total; a negative or huge count never makes it negative.
func TestClusterSize(t *testing.T) {
	for _, c := range []struct {
		cluster slurm.Cluster
		want    int
	}{
		{slurm.Cluster{GPUs: []slurm.GPUCount{{Total: 6}, {Total: 2}}}, 8},
		{slurm.Cluster{Nodes: []slurm.Node{{GPUs: []slurm.GPUCount{{Total: 4}}}, {GPUs: []slurm.GPUCount{{Total: 4}}}}}, 8},
		{slurm.Cluster{GPUs: []slurm.GPUCount{{Total: -100}, {Total: 3}}}, 3},
		{slurm.Cluster{GPUs: []slurm.GPUCount{{Total: math.MaxInt}, {Total: math.MaxInt}}}, math.MaxInt32},
		{slurm.Cluster{}, 0},
	} {
		if got := clusterSize(&c.cluster); got != c.want {
			t.Errorf("clusterSize(%+v) = %d, want %d", c.cluster, got, c.want)
		}
	}
}
