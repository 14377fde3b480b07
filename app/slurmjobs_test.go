package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// Device IDs of the Slurm fixture.
const (
	clusID = "CLUS-1111-1111-1111" // stands for cluster "HPC"
	dup1ID = "DUPA-2222-2222-2222" // both stand for cluster "twin"
	dup2ID = "DUPB-3333-3333-3333"
	compID = "COMP-4444-4444-4444" // a compute node of HPC
)

// slurmOwner is the member who launched the fixture's Slurm jobs through
// the cluster agent (member name "alice").
var slurmOwner, slurmOwnerID = memberKey(7)

// trainJob is the cluster agent's record of alice's Slurm job 123, signed
// by her (see jobs.Proof): one per test binary, as its ID is the proof's.
var trainJob = sync.OnceValue(func() jobs.Job {
	spec := jobs.Spec{Cmd: []string{"python", "train.py"}, GPUs: 2, Name: "train"}
	proof, err := slurmOwner.Prove(clusID, spec)
	if err != nil {
		panic(err)
	}
	p, _ := jobs.DecodeProof(proof)
	return jobs.Job{ID: p.JobID(), Name: "train", Node: clusID, Owner: slurmOwnerID, Spec: spec, OwnerProof: proof,
		Executor: "slurm", Container: "123", State: jobs.Running, Created: t0}
})

// biggerJob is the cluster agent's record of Slurm job 128 for 8 GPUs,
// with alice's proof of a job of one.
var biggerJob = sync.OnceValue(func() jobs.Job {
	spec := jobs.Spec{Cmd: []string{"python", "eval.py"}, GPUs: 1}
	proof, err := slurmOwner.Prove(clusID, spec)
	if err != nil {
		panic(err)
	}
	p, _ := jobs.DecodeProof(proof)
	spec.GPUs = 8
	return jobs.Job{ID: p.JobID(), Name: "bigger", Node: clusID, Owner: slurmOwnerID, Spec: spec, OwnerProof: proof,
		Executor: "slurm", Container: "128", State: jobs.Running, Created: t0}
})

// slurmFixture is a replica with a cluster agent and its Slurm jobs (one
// alice signed, others its agent claims are hers), two machines claiming
// one cluster, and a plain machine's records.
func slurmFixture(t *testing.T) *store.DB {
	t.Helper()
	db := openDB(t)
	for id, name := range map[string]string{selfID: "zeta", alphaID: "alpha", clusID: "hpc-login", dup1ID: "twin1", dup2ID: "twin2", compID: "node1", slurmOwnerID: "alice"} {
		putMember(t, db, id, name, false)
	}
	putNode(t, db, clusID, NodeRecord{Info: agent.Info{ID: clusID, Name: "hpc-login"}, Cluster: &slurm.Cluster{Name: "HPC"}})
	putNode(t, db, dup1ID, NodeRecord{Info: agent.Info{ID: dup1ID, Name: "twin1"}, Cluster: &slurm.Cluster{Name: "twin"}})
	putNode(t, db, dup2ID, NodeRecord{Info: agent.Info{ID: dup2ID, Name: "twin2"}, Cluster: &slurm.Cluster{Name: "Twin"}})
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	putNode(t, db, slurmOwnerID, NodeRecord{Info: agent.Info{ID: slurmOwnerID, Name: "alice"}})
	job := func(origin string, j jobs.Job) {
		putRecord(t, db, origin, KindJob, j.ID, t0, mustJSON(t, j))
	}
	train := trainJob()
	job(clusID, train)
	job(clusID, jobs.Job{ID: "job-other", Name: "forged", Node: alphaID, Owner: slurmOwnerID, Executor: "slurm", Container: "124", State: jobs.Running})
	job(clusID, jobs.Job{ID: "job-docker", Name: "nb", Node: clusID, Owner: slurmOwnerID, Container: "125", State: jobs.Running})
	// The agent's claims that alice launched Slurm jobs 126 to 128: with no
	// proof, with her proof of job 123 (another job ID), with her proof of
	// a job of one GPU for a job of 8.
	job(clusID, jobs.Job{ID: "job-noproof", Name: "claimed", Node: clusID, Owner: slurmOwnerID, Executor: "slurm", Container: "126", State: jobs.Running})
	copied := train
	copied.ID, copied.Name, copied.Container = "job-copied", "copied", "127"
	job(clusID, copied)
	job(clusID, biggerJob())
	job(dup1ID, jobs.Job{ID: "job-dup1", Name: "a", Node: dup1ID, Owner: slurmOwnerID, Executor: "slurm", Container: "5"})
	job(dup2ID, jobs.Job{ID: "job-dup2", Name: "b", Node: dup2ID, Owner: slurmOwnerID, Executor: "slurm", Container: "5"})
	job(alphaID, jobs.Job{ID: "job-plain", Name: "c", Node: alphaID, Owner: slurmOwnerID, Executor: "slurm", Container: "123"})
	return db
}

func TestSlurmJobsFind(t *testing.T) {
	x := NewSlurmJobs(slurmFixture(t))
	tests := []struct {
		name, cluster, id string
		job, owner        string
		ok                bool
	}{
		{"the cluster agent's job", "hpc", "123", trainJob().ID, slurmOwnerID, true},
		{"names in any case", "HPC", "123", trainJob().ID, slurmOwnerID, true},
		{"an owner without proof", "hpc", "126", "job-noproof", "", true},
		{"another job's proof", "hpc", "127", "job-copied", "", true},
		{"a proof of another spec", "hpc", "128", biggerJob().ID, "", true},
		{"another cluster's ID", "other", "123", "", "", false},
		{"a record naming another node", "hpc", "124", "", "", false},
		{"not a Slurm job", "hpc", "125", "", "", false},
		{"a Slurm job labpool did not launch", "hpc", "999", "", "", false},
		{"one agent per cluster", "twin", "5", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, owner, ok := x.Find(tt.cluster, tt.id)
			if job != tt.job || owner != tt.owner || ok != tt.ok {
				t.Errorf("Find(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.cluster, tt.id, job, owner, ok, tt.job, tt.owner, tt.ok)
			}
		})
	}
	if j, ok := x.Job(trainJob().ID); !ok || j.Name != "train" || j.Owner != slurmOwnerID {
		t.Errorf("Job(train) = %+v, %v", j, ok)
	}
	if j, ok := x.Job("job-noproof"); !ok || j.Owner != "" {
		t.Errorf("Job(job-noproof) = %+v, %v; want the job, owned by no one", j, ok)
	}
	if _, ok := x.Job("job-plain"); ok {
		t.Error("Job names a record of a machine that stands for no cluster")
	}
}

// SlurmJobs reads the replica again on a miss, at most every MissEvery.
func TestSlurmJobsReadsAgainOnAMiss(t *testing.T) {
	db := slurmFixture(t)
	x := NewSlurmJobs(db)
	now := t0
	x.now = func() time.Time { return now }
	if _, _, ok := x.Find("hpc", "200"); ok {
		t.Fatal("found a job not launched yet")
	}
	putRecord(t, db, clusID, KindJob, "job-new", t0.Add(time.Second), mustJSON(t, jobs.Job{ID: "job-new", Node: clusID, Owner: slurmOwnerID, Executor: "slurm", Container: "200"}))
	now = now.Add(slurmJobsMissEvery - time.Second)
	if _, _, ok := x.Find("hpc", "200"); ok {
		t.Error("read the replica again before MissEvery")
	}
	now = now.Add(time.Second)
	if job, _, ok := x.Find("hpc", "200"); !ok || job != "job-new" {
		t.Errorf("after MissEvery: %q, %v; want job-new", job, ok)
	}
}

// A compute node's GPU held by a Slurm job that labpool launched shows the
// job's name and owner, read from the cluster agent's record, when the
// record proves the owner; one the agent merely claims is someone's reads
// "(unverified)".
func TestGPUNamesSlurmJob(t *testing.T) {
	db := slurmFixture(t)
	putNode(t, db, compID, NodeRecord{Info: agent.Info{ID: compID, Name: "node1"}})
	s := testSample(t0, 20, 4)
	holdGPU(&s, 0, "slurm job 123", trainJob().ID)
	holdGPU(&s, 1, "slurm job 77", "")
	holdGPU(&s, 2, "slurm job 123", "job-plain") // not a cluster agent's: no name
	holdGPU(&s, 3, "slurm job 126", "job-noproof")
	putSample(t, db, compID, history.KindSample1s, s)
	svc := newService(t, db, Self{ID: selfID, ShortID: shortID(selfID), Name: "zeta"}, fakeLive{compID: true}, nil)
	gpus, err := svc.GPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type named struct{ job, holder, name, owner, ownerName string }
	want := map[int]named{
		0: {trainJob().ID, "slurm job 123", "train", slurmOwnerID, "alice"},
		1: {"", "slurm job 77", "", "", ""},
		2: {"job-plain", "slurm job 123", "", "", ""},
		3: {"job-noproof", "slurm job 126", "claimed", "", UnverifiedOwner},
	}
	n := 0
	for _, g := range gpus {
		if g.Node != compID {
			continue
		}
		n++
		if got := (named{g.Job, g.Holder, g.JobName, g.JobOwner, g.JobOwnerName}); got != want[g.Index] {
			t.Errorf("GPU %d: %+v, want %+v", g.Index, got, want[g.Index])
		}
	}
	if n != 4 {
		t.Errorf("%d GPUs of the compute node, want 4", n)
	}
}
