package app

import (
	"context"
	"testing"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
)

// TestGPUJobNames: a GPU a job holds carries the job's name and its owner's
// member name from the job's record of that machine; a job whose record has
// not arrived, or a record filed under another job's key, names nothing; a
// record that does not prove its owner names them "(unverified)".
func TestGPUJobNames(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	olga, olgaID := memberKey(5)
	putMember(t, db, olgaID, "olga", false)
	j1 := proven(t, olga, olgaID, alphaID, jobs.Job{Name: "train-bert", Spec: jobs.Spec{Image: "img"}})
	j4 := jobs.Job{ID: "job-4", Name: "unproven", Owner: olgaID} // its node says olga's, with no proof
	s := testSample(t0, 20, 4)
	for i, job := range []string{j1.ID, "job-2", "job-3", j4.ID} {
		s.Holding.HoldGPU(s.GPUs[i].UUID, alloc.Holder{Kind: alloc.Job, ID: job})
	}
	putSample(t, db, alphaID, history.KindSample1s, s)
	putRecord(t, db, alphaID, KindJob, j1.ID, t0, mustJSON(t, j1))
	putRecord(t, db, alphaID, KindJob, "job-3", t0, mustJSON(t, jobs.Job{ID: j1.ID, Name: "forged", Owner: alphaID}))
	putRecord(t, db, alphaID, KindJob, j4.ID, t0, mustJSON(t, j4))
	svc := newService(t, db, Self{ID: selfID, ShortID: shortID(selfID), Name: "zeta"}, fakeLive{alphaID: true}, nil)

	gpus, err := svc.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type named struct{ job, name, owner, ownerName string }
	want := map[int]named{
		0: {j1.ID, "train-bert", olgaID, "olga"},
		1: {"job-2", "", "", ""},
		2: {"job-3", "", "", ""},
		3: {"job-4", "unproven", "", UnverifiedOwner},
	}
	n := 0
	for _, g := range gpus {
		if g.Node != alphaID {
			continue
		}
		n++
		if got := (named{g.Job, g.JobName, g.JobOwner, g.JobOwnerName}); got != want[g.Index] {
			t.Errorf("GPU %d: %+v, want %+v", g.Index, got, want[g.Index])
		}
	}
	if n != 4 {
		t.Errorf("%d GPUs of alpha, want 4", n)
	}
}
