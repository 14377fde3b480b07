package app

import (
	"context"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
)

// TestJobsNamePeople: alice launched a job from her laptop that holds a
// GPU of alpha's, and one from her dgx, a machine of the pool with a name
// of its own. The jobs list (ps, the Jobs view's owner column) and the GPU
// the job holds name her, "alice", for both; Owner stays the device that
// launched each (what the proof is of).
func TestJobsNamePeople(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	dgxKey, dgx := memberKey(41)
	lapKey, lap := memberKey(42)
	putPersonDevice(t, db, dgx, "dgx", dgx, "alice", false)
	putPersonDevice(t, db, lap, "alice-laptop", dgx, "alice", false)
	putNode(t, db, dgx, NodeRecord{Info: agent.Info{ID: dgx, Name: "dgx-station"}})

	start := t0.Add(-2 * time.Hour)
	end := start.Add(time.Hour)
	running := proven(t, lapKey, lap, alphaID, jobs.Job{Name: "from-laptop", Node: alphaID, State: jobs.Running,
		GPUIndexes: []int{0}, Started: &start, Created: start, Spec: jobs.Spec{Image: "img", GPUs: 1}})
	ended := proven(t, dgxKey, dgx, alphaID, jobs.Job{Name: "from-dgx", Node: alphaID, State: jobs.Exited,
		GPUIndexes: []int{1}, Started: &start, Finished: &end, Created: start, Spec: jobs.Spec{Image: "img", GPUs: 1}})
	for _, j := range []jobs.Job{running, ended} {
		putRecord(t, db, alphaID, KindJob, j.ID, start, mustJSON(t, j))
	}
	s := testSample(t0, 20, 4)
	s.Holding.HoldGPU(s.GPUs[0].UUID, alloc.Holder{Kind: alloc.Job, ID: running.ID})
	putSample(t, db, alphaID, history.KindSample1s, s)
	svc := newService(t, db, Self{ID: selfID, ShortID: shortID(selfID), Name: "zeta"}, fakeLive{alphaID: true}, nil)
	svc.now = func() time.Time { return t0 }

	all, err := svc.Jobs(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string][2]string{}
	for _, j := range all {
		owners[j.Name] = [2]string{j.Owner, j.OwnerName}
	}
	want := map[string][2]string{"from-laptop": {lap, "alice"}, "from-dgx": {dgx, "alice"}}
	for name, w := range want {
		if owners[name] != w {
			t.Errorf("jobs: %s is %q's; want %q", name, owners[name], w)
		}
	}
	gpus, err := svc.GPUs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, g := range gpus {
		if g.Job == running.ID {
			held++
			if g.JobOwner != lap || g.JobOwnerName != "alice" {
				t.Errorf("GPU %d holds alice's job as %q, %q; want %q, alice", g.Index, g.JobOwner, g.JobOwnerName, lap)
			}
		}
	}
	if held != 1 {
		t.Errorf("%d GPUs hold the laptop's job; want 1", held)
	}
}
