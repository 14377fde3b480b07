package app

import (
	"context"
	"testing"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
)

// TestGPUJobNames: a GPU a job holds carries the job's name and its owner's
// member name from the job's record of that machine; a job whose record has
// not arrived, or a record filed under another job's key, names nothing.
func TestGPUJobNames(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	s := testSample(t0, 20, 3)
	s.GPUs[0].Job, s.GPUs[1].Job, s.GPUs[2].Job = "job-1", "job-2", "job-3"
	putSample(t, db, alphaID, history.KindSample1s, s)
	putRecord(t, db, alphaID, KindJob, "job-1", t0, mustJSON(t, jobs.Job{ID: "job-1", Name: "train-bert", Owner: selfID}))
	putRecord(t, db, alphaID, KindJob, "job-3", t0, mustJSON(t, jobs.Job{ID: "job-1", Name: "forged", Owner: alphaID}))
	svc := newService(t, db, Self{ID: selfID, ShortID: shortID(selfID), Name: "zeta"}, fakeLive{alphaID: true}, nil)

	gpus, err := svc.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type named struct{ job, name, owner, ownerName string }
	want := map[int]named{
		0: {"job-1", "train-bert", selfID, "zeta"},
		1: {"job-2", "", "", ""},
		2: {"job-3", "", "", ""},
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
	if n != 3 {
		t.Errorf("%d GPUs of alpha, want 3", n)
	}
}
