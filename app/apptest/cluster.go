package apptest

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// ClusterID is the device ID of the cluster machine WriteCluster writes.
const ClusterID = "HPCC-CCCC-CCCC-CCCC"

// Cluster is a cluster's card as an agent with --slurm reads it at now:
// partitions gpu (default, up to 2 days) and debug; nodes gpu01 (mixed,
// a100 3 of 4 allocated), gpu02 (idle, a100 4) and gpu03 (drained, h100 8);
// two running and two pending jobs, the first running one launched through
// labpool by the member owner (device ID) as job jobID.
func Cluster(now time.Time, jobID, owner string) *slurm.Cluster {
	a100 := func(alloc int) []slurm.GPUCount { return []slurm.GPUCount{{Type: "a100", Total: 4, Alloc: alloc}} }
	return &slurm.Cluster{
		Name: "hpc", Version: "23.11.4", Read: now,
		Partitions: []slurm.Partition{
			{Name: "gpu", Default: true, State: "up", Nodes: []string{"gpu01", "gpu02", "gpu03"}, MaxTimeS: 2 * 86400, CPUs: 128,
				GPUs: []slurm.GPUCount{{Type: "a100", Total: 8, Alloc: 3}, {Type: "h100", Total: 8}}},
			{Name: "debug", State: "up", Nodes: []string{"gpu02"}, MaxTimeS: 3600, CPUs: 32, GPUs: a100(0)},
		},
		Nodes: []slurm.Node{
			{Name: "gpu01", State: "mixed", Partitions: []string{"gpu"}, CPUs: 32, CPUsAlloc: 12, MemoryMB: 256000, MemAllocMB: 96000, GPUs: a100(3)},
			{Name: "gpu02", State: "idle", Partitions: []string{"gpu", "debug"}, CPUs: 32, MemoryMB: 256000, GPUs: a100(0)},
			{Name: "gpu03", State: "drained", Reason: "bad DIMM", Partitions: []string{"gpu"}, CPUs: 64, MemoryMB: 512000,
				GPUs: []slurm.GPUCount{{Type: "h100", Total: 8}}},
		},
		GPUs: []slurm.GPUCount{{Type: "a100", Total: 8, Alloc: 3}, {Type: "h100", Total: 8}},
		Queue: []slurm.QueueJob{
			{ID: "4101", Name: "bert-large", User: "lab", State: "RUNNING", Partition: "gpu", Nodes: []string{"gpu01"}, GPUs: 2,
				Submitted: now.Add(-2 * time.Hour), Started: now.Add(-2 * time.Hour), LabpoolJob: jobID, Owner: owner},
			{ID: "4102", Name: "sweep-7", User: "ana", State: "RUNNING", Partition: "gpu", Nodes: []string{"gpu01"}, GPUs: 1,
				Submitted: now.Add(-time.Hour), Started: now.Add(-50 * time.Minute)},
			{ID: "4103", Name: "llama-ft", User: "lab", State: "PENDING", Reason: "Resources", Partition: "gpu", GPUs: 8,
				Submitted: now.Add(-20 * time.Minute)},
			{ID: "4104", Name: "eval", User: "ben", State: "PENDING", Reason: "Priority", Partition: "gpu", GPUs: 1,
				Submitted: now.Add(-5 * time.Minute)},
		},
		Running: 2, Pending: 2,
		Containers: []string{"pyxis"},
	}
}

// WriteCluster writes into db the machine standing for c (ClusterID, named
// name): a member, its node record with c, a sample of its submit host (no
// GPU of its own) and the record of each of js (the cluster's labpool
// jobs).
func WriteCluster(t testing.TB, db *store.DB, now time.Time, name string, c *slurm.Cluster, js ...jobs.Job) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.PutMember(ctx, store.MemberRow{ID: ClusterID, Name: name, Version: 1, AddedAt: now, AddedBy: SelfID}); err != nil {
		t.Fatal(err)
	}
	nr := app.NodeRecord{Info: agent.Info{ID: ClusterID, Name: name}, Addresses: []string{"192.0.2.9:7420"}, Cluster: c}
	if _, err := db.Append(ctx, ClusterID, app.KindNode, "", now, MustJSON(t, nr)); err != nil {
		t.Fatal(err)
	}
	sm := agent.Sample{Time: now, GPUError: "no NVIDIA GPU found",
		Host: host.Stats{CPUPercent: 12, Load1: 0.8, MemUsedBytes: 6 << 30, MemTotalBytes: 64 << 30}}
	if _, err := db.Append(ctx, ClusterID, history.KindSample1s, fmt.Sprint(now.Unix()), now, MustJSON(t, sm)); err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if _, err := db.Append(ctx, ClusterID, app.KindJob, j.ID, now, MustJSON(t, j)); err != nil {
			t.Fatal(err)
		}
	}
}

// Launcher is a member's device for fixtures (its key from seed): it signs
// launches as the app does (jobs.LaunchSigner), and ID is its device ID.
type Launcher struct {
	jobs.LaunchSigner
	ID string
}

// NewLauncher returns the member device of seed.
func NewLauncher(seed byte) Launcher {
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	priv := ed25519.NewKeyFromSeed(s)
	pub := priv.Public().(ed25519.PublicKey)
	return Launcher{jobs.LaunchSigner{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }}, folders.DeviceID(pub)}
}

// Proven is j as node records l's launch of it: owned by l, named after
// l's proof (Job.VerifyOwner holds), which it keeps.
func (l Launcher) Proven(t testing.TB, node string, j jobs.Job) jobs.Job {
	t.Helper()
	proof, err := l.Prove(node, j.Spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jobs.DecodeProof(proof)
	if err != nil {
		t.Fatal(err)
	}
	j.ID, j.Node, j.Owner, j.OwnerProof = p.JobID(), node, l.ID, proof
	return j
}
