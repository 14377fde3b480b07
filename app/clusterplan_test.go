package app

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

const hpcID = "HPCC-GGGG-GGGG-GGGG"

// hpcCluster is a cluster with one partition "gpu" (default, up to a day)
// of two nodes with 4 GPUs each (n1: 3 allocated, n2: 1) and a queue of
// three jobs that name labpool jobs.
func hpcCluster() *slurm.Cluster {
	return &slurm.Cluster{
		Name:       "hpc",
		Partitions: []slurm.Partition{{Name: "gpu", Default: true, State: "up", Nodes: []string{"n1", "n2"}, MaxTimeS: 86400}},
		Nodes: []slurm.Node{
			{Name: "n1", State: "mixed", Partitions: []string{"gpu"}, CPUs: 32, MemoryMB: 128000, GPUs: []slurm.GPUCount{{Type: "a100", Total: 4, Alloc: 3}}},
			{Name: "n2", State: "mixed", Partitions: []string{"gpu"}, CPUs: 32, MemoryMB: 128000, GPUs: []slurm.GPUCount{{Type: "a100", Total: 4, Alloc: 1}}},
		},
		GPUs: []slurm.GPUCount{{Type: "a100", Total: 8, Alloc: 4}},
		Queue: []slurm.QueueJob{
			{ID: "101", Name: "train", State: "RUNNING", Partition: "gpu", LabpoolJob: "job-mike", Owner: mikeID},
			{ID: "102", Name: "forged", State: "PENDING", Reason: "Priority", Partition: "gpu", LabpoolJob: "job-mike", Owner: alphaID},
			{ID: "103", Name: "ghost", State: "PENDING", Reason: "Resources", Partition: "gpu", LabpoolJob: "job-none", Owner: mikeID},
			{ID: "104", Name: "theirs", State: "PENDING", Reason: "Resources", Partition: "gpu"},
		},
		Running: 1, Pending: 3,
	}
}

func TestPlanCluster(t *testing.T) {
	nodes, active := planPool()
	hpc := Node{ID: hpcID, Name: "hpc", Online: true, GPUs: []GPU{}, Cluster: hpcCluster()}
	nodes = append(nodes, hpc)
	big := nodes[0]
	tests := []struct {
		name    string
		named   *Node
		spec    jobs.Spec
		node    string
		fits    bool
		command string // "": no cluster plan
		reason  string // a part of the reason
	}{
		{"named, starts now", &hpc, jobs.Spec{Cmd: []string{"nvidia-smi"}, GPUs: 2, CPUs: 4, MemoryBytes: 16 << 30, TimeLimitSeconds: 7200}, hpcID, true,
			"sbatch --nodes=1 --gres=gpu:2 --cpus-per-task=4 --mem=16384M --time=120", "can start now: 2 GPUs, 4 CPUs and 16 GiB free on n2"},
		{"named, queues", &hpc, jobs.Spec{Cmd: []string{"x"}, GPUs: 4}, hpcID, true, "sbatch --nodes=1 --gres=gpu:4", "will wait in Slurm's queue"},
		{"named, never", &hpc, jobs.Spec{Cmd: []string{"x"}, Nodes: 3, GPUsPerNode: 1}, hpcID, false, "sbatch --nodes=3 --ntasks-per-node=1 --gres=gpu:1",
			"partition gpu has 2 nodes, 3 asked"},
		{"an image where there is no runtime", &hpc, jobs.Spec{Image: "pytorch:24", GPUs: 1}, hpcID, false, "sbatch --nodes=1 --gres=gpu:1",
			`refused by rule "command-jobs-only": cluster hpc runs command jobs only: it has neither pyxis nor Apptainer`},
		{"GPUs by index", &hpc, jobs.Spec{Cmd: []string{"x"}, GPUIDs: []int{0}}, hpcID, false, "sbatch --nodes=1",
			`refused by rule "gpus": the cluster's scheduler places GPUs itself`},
		{"GPUs with several nodes", &hpc, jobs.Spec{Cmd: []string{"x"}, Nodes: 2, GPUs: 4}, hpcID, false, "sbatch",
			`refused by rule "gpus": ask for GPUs, or for nodes and GPUs per node, not both`},
		{"GPUs per node on one node", &hpc, jobs.Spec{Cmd: []string{"x"}, GPUsPerNode: 2}, hpcID, false, "sbatch --nodes=1 --gres=gpu:2",
			`refused by rule "gpus": GPUs per node go with nodes`},
		{"unnamed, a pool job stays on the pool", nil, jobs.Spec{Image: "x", GPUs: 1}, "SMALL", true, "", "least loaded"},
		{"unnamed, a partition picks the cluster", nil, jobs.Spec{Cmd: []string{"x"}, GPUs: 1, Partition: "gpu"}, hpcID, true,
			"sbatch --partition=gpu --nodes=1 --gres=gpu:1", "hpc: can start now"},
		{"multi-node on a pool machine", &big, jobs.Spec{Image: "x", Nodes: 2, GPUsPerNode: 1}, "BIG", false, "",
			`refused by rule "multi-node": nodes and GPUs per node ask for a job across machines: big runs a job on one machine`},
		{"partition on a pool machine", &big, jobs.Spec{Image: "x", Partition: "gpu"}, "BIG", false, "",
			`refused by rule "cluster-options": a partition is a cluster's option: big schedules no jobs`},
		// A container is stopped at its time limit too (node/jobs' deadline.go).
		{"time limit on a pool machine", &big, jobs.Spec{Image: "x", TimeLimitSeconds: 60}, "BIG", true, "", ""},
		{"unnamed, a time limit stays on the pool", nil, jobs.Spec{Image: "x", GPUs: 1, TimeLimitSeconds: 3600}, "SMALL", true, "", "least loaded"},
		{"named cluster, a time limit", &hpc, jobs.Spec{Cmd: []string{"x"}, GPUs: 1, TimeLimitSeconds: 3600}, hpcID, true,
			"sbatch --nodes=1 --gres=gpu:1 --time=60", "can start now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan(nodes, tt.named, tt.spec, active)
			cmdline := ""
			if p.Cluster != nil {
				cmdline = p.Cluster.Command
			}
			if p.Node != tt.node || p.Fits != tt.fits || cmdline != tt.command || !strings.Contains(p.Reason, tt.reason) {
				t.Errorf("plan = %s fits %v %q: %q;\nwant %s fits %v %q: ...%q...", p.Node, p.Fits, cmdline, p.Reason, tt.node, tt.fits, tt.command, tt.reason)
			}
		})
	}
}

func TestPlanClusterNotPickedAlone(t *testing.T) {
	hpc := Node{ID: hpcID, Name: "hpc", Online: true, GPUs: []GPU{}, Cluster: hpcCluster()}
	p := plan([]Node{hpc}, nil, jobs.Spec{Image: "x", GPUs: 1}, nil)
	if p.Fits || !strings.Contains(p.Reason, "hpc: a Slurm cluster, picked only when named (--node hpc)") {
		t.Errorf("plan = fits %v: %q; want the cluster named as one to name", p.Fits, p.Reason)
	}
}

// TestClusterQueueOwners: a queue entry names a labpool job and its owner
// only where the cluster's own job record agrees, and proves that owner.
// The attacks: a user of the cluster (not of the pool) submits with a
// comment that names a member, or a member's job, to pass their job off as
// that member's; the cluster's agent writes a record that claims a member
// launched a job, with no proof of theirs.
func TestClusterQueueOwners(t *testing.T) {
	db := openDB(t)
	mike, mikeKeyID := memberKey(11)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, mikeKeyID, "mike", false)
	putNode(t, db, mikeKeyID, NodeRecord{Info: agent.Info{ID: mikeKeyID, Name: "mike"}})
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, hpcID, "hpc", false)
	train := proven(t, mike, mikeKeyID, hpcID, jobs.Job{Name: "train", Node: hpcID, State: jobs.Running, Spec: jobs.Spec{Cmd: []string{"train"}}})
	c := hpcCluster()
	for i := range c.Queue {
		if c.Queue[i].LabpoolJob == "job-mike" {
			c.Queue[i].LabpoolJob = train.ID
		}
		if c.Queue[i].Owner == mikeID {
			c.Queue[i].Owner = mikeKeyID
		}
	}
	c.Queue = append(c.Queue, slurm.QueueJob{ID: "105", Name: "claimed", State: "RUNNING", Partition: "gpu", LabpoolJob: "job-claim", Owner: mikeKeyID})
	putNode(t, db, hpcID, NodeRecord{Info: agent.Info{ID: hpcID, Name: "hpc"}, Cluster: c})
	putRecord(t, db, hpcID, KindJob, train.ID, t0, mustJSON(t, train))
	// The agent's claim, with no proof: mike launched job-claim.
	putRecord(t, db, hpcID, KindJob, "job-claim", t0, mustJSON(t, jobs.Job{ID: "job-claim", Name: "claimed", Node: hpcID, Owner: mikeKeyID, State: jobs.Running}))
	// A job record written by another machine does not vouch for the cluster's queue.
	putRecord(t, db, alphaID, KindJob, "job-none", t0, mustJSON(t, jobs.Job{ID: "job-none", Node: alphaID, Owner: mikeKeyID, State: jobs.Running}))

	nodes, err := NewReader(db, Self{ID: selfID, Name: "zeta"}).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got *slurm.Cluster
	var owners map[string]string
	for _, n := range nodes {
		if n.ID == hpcID {
			got, owners = n.Cluster, n.ClusterOwners
		}
	}
	if got == nil {
		t.Fatal("the cluster's node has no Cluster")
	}
	type entry struct{ ID, Job, Owner string }
	var entries []entry
	for _, q := range got.Queue {
		entries = append(entries, entry{q.ID, q.LabpoolJob, q.Owner})
	}
	want := []entry{{"101", train.ID, mikeKeyID}, {"102", "", ""}, {"103", "", ""}, {"104", "", ""}, {"105", "", ""}}
	if diff := cmp.Diff(want, entries); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{mikeKeyID: "mike"}, owners); diff != "" {
		t.Errorf("ClusterOwners (-want +got):\n%s", diff)
	}
}

// TestClusterQueueCapped: a peer's record with more queue entries than an
// agent publishes is cut to slurm.QueueCap before any is looked up.
func TestClusterQueueCapped(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, hpcID, "hpc", false)
	c := hpcCluster()
	c.Queue = nil
	for i := range 3 * slurm.QueueCap {
		c.Queue = append(c.Queue, slurm.QueueJob{ID: fmt.Sprint(i), LabpoolJob: fmt.Sprint("j", i), Owner: mikeID})
	}
	putNode(t, db, hpcID, NodeRecord{Info: agent.Info{ID: hpcID, Name: "hpc"}, Cluster: c})
	nodes, err := NewReader(db, Self{ID: selfID, Name: "zeta"}).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.ID == hpcID && (len(n.Cluster.Queue) != slurm.QueueCap || n.Cluster.Queue[0].Owner != "") {
			t.Errorf("queue of %d, first %+v; want %d, no owner without a record", len(n.Cluster.Queue), n.Cluster.Queue[0], slurm.QueueCap)
		}
	}
}

// TestPlanClusterFree: the free GPUs a cluster plan counts are alloc.Free
// on the partition's unit: of the grants record the cluster's machine
// publishes where it has one (the authority's view), else of its card.
func TestPlanClusterFree(t *testing.T) {
	spec := jobs.Spec{Cmd: []string{"x"}, GPUs: 1}
	hpc := Node{ID: hpcID, Name: "hpc", Online: true, GPUs: []GPU{}, Cluster: hpcCluster()}
	if p := plan([]Node{hpc}, &hpc, spec, nil); p.Free != 4 {
		t.Errorf("from the card: %d free; want 4 (n1 3 of 4 allocated, n2 1 of 4)", p.Free)
	}
	units, grants := slurm.Allocation(*hpc.Cluster, hpcID)
	grants = append(grants, alloc.Grant{Holder: alloc.Holder{Kind: alloc.SlurmJob, ID: "105", Name: "slurm job 105 of lab"},
		Units: []string{slurm.PartitionUnit(*hpc.Cluster, "gpu")}, GPUs: 3})
	hpc.Alloc = &Allocation{Units: units, Grants: grants}
	if p := plan([]Node{hpc}, &hpc, spec, nil); p.Free != 1 {
		t.Errorf("from the grants record: %d free; want 1 (3 more held by job 105)", p.Free)
	}
}
