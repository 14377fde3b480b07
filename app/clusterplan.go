package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// A Slurm cluster is a machine of the pool whose agent stands for the
// cluster (Node.Cluster): Slurm places its jobs, so a plan for it says
// what sbatch will be asked and whether the partition can run the job
// (slurm.Plan), not which GPUs it would get.

// clusterResources is what spec asks of a backend that schedules.
func clusterResources(spec jobs.Spec) jobs.Resources {
	return jobs.Resources{CPUs: spec.CPUs, MemoryBytes: spec.MemoryBytes, GPUs: spec.GPUs, Nodes: spec.Nodes,
		GPUsPerNode: spec.GPUsPerNode, TimeLimit: time.Duration(spec.TimeLimitSeconds) * time.Second, Partition: spec.Partition}
}

// planCluster is what a launch of spec would find on the cluster machine n.
func planCluster(n Node, spec jobs.Spec, at time.Time) NodePlan {
	np := NodePlan{Node: n.ID, NodeName: n.Name, GPUs: []PlanGPU{}}
	sp := slurm.Plan(*n.Cluster, clusterResources(spec))
	np.Cluster = &sp
	np.Free = clusterFree(n, sp.Partition, at)
	switch {
	case !n.Online:
		np.Reason = n.Name + " is offline"
	// The rules the cluster's agent refuses these by (node/jobs), named alike.
	case len(spec.GPUIDs) > 0 || len(spec.MIGIDs) > 0 || spec.MinGPUMemBytes > 0:
		np.Reason = fmt.Sprintf("refused by rule %q: the cluster's scheduler places GPUs itself: ask for a count (GPU indexes, MIG instances and GPU memory name a machine's own GPUs)", "gpus")
	case spec.Nodes > 1 && spec.GPUs > 0:
		np.Reason = fmt.Sprintf("refused by rule %q: ask for GPUs, or for nodes and GPUs per node, not both", "gpus")
	case spec.GPUsPerNode > 0 && spec.Nodes <= 1:
		np.Reason = fmt.Sprintf("refused by rule %q: GPUs per node go with nodes (2 or more): on one node, ask for GPUs", "gpus")
	case spec.Image != "" && len(n.Cluster.Containers) == 0:
		np.Reason = fmt.Sprintf("refused by rule %q: cluster %s runs command jobs only: it has neither pyxis nor Apptainer (labpool run --node %s -- CMD...)",
			"command-jobs-only", n.Name, n.Name)
	default:
		np.Fits, np.Reason = sp.Fits, sp.Reason
	}
	return np
}

// clusterFree is how many GPUs of partition (the whole cluster when it
// names none) no Slurm job holds, as alloc.Free counts on the cluster
// machine's published grants record, or on its card where it publishes
// no cluster units.
func clusterFree(n Node, partition string, at time.Time) int {
	id := slurm.ClusterUnit(*n.Cluster)
	if partition != "" {
		id = slurm.PartitionUnit(*n.Cluster, partition)
	}
	if n.Alloc != nil && slices.ContainsFunc(n.Alloc.Units, func(u alloc.Unit) bool { return u.Kind == alloc.Cluster }) {
		for _, u := range n.Alloc.Units {
			if u.ID == id {
				return alloc.Free(u, n.Alloc.Grants, at)
			}
		}
		return 0
	}
	if partition == "" {
		return slurm.FreeGPUs(*n.Cluster)
	}
	return slurm.PartitionFree(*n.Cluster, partition)
}

// notCluster says why spec, asking what only a cluster does, cannot run on
// the machine n that is not one ("" when it asks nothing of the kind), as
// the machine itself refuses it (node/jobs' rules "cluster-options" and
// "multi-node"). A time limit is every machine's: a container is stopped
// at its limit too.
func notCluster(n Node, spec jobs.Spec) string {
	switch {
	case spec.Partition != "":
		return fmt.Sprintf("refused by rule %q: a partition is a cluster's option: %s schedules no jobs", "cluster-options", n.Name)
	case spec.Nodes > 1 || spec.GPUsPerNode != 0:
		return fmt.Sprintf("refused by rule %q: nodes and GPUs per node ask for a job across machines: %s runs a job on one machine", "multi-node", n.Name)
	}
	return ""
}

// asksCluster says whether spec asks for what only a cluster does, so
// that a plan with no machine named may pick one.
func asksCluster(spec jobs.Spec) bool { return notCluster(Node{}, spec) != "" }

// nameClusterJobs checks the labpool jobs the queue of each cluster of
// nodes names against the jobs' records, and names their owners (the
// pool's names: the member names of names, by device ID). An entry whose
// job this machine has no record of, whose record names another owner, or
// does not prove its owner (Reader.proofRule), is a Slurm job like any
// other: Slurm's comment is written by whoever submits, a cluster's users
// are not the pool's members, and its agent may write any owner.
func (r *Reader) nameClusterJobs(ctx context.Context, nodes []Node, names map[string]string) error {
	for ni := range nodes {
		n := &nodes[ni]
		if n.Cluster == nil {
			continue
		}
		if len(n.Cluster.Queue) > slurm.QueueCap { // a peer's record: no more than an agent publishes
			n.Cluster.Queue = n.Cluster.Queue[:slurm.QueueCap]
		}
		owners := map[string]string{} // labpool job ID -> its owner, as its record says ("": none)
		for qi := range n.Cluster.Queue {
			q := &n.Cluster.Queue[qi]
			if q.LabpoolJob == "" && q.Owner == "" {
				continue
			}
			owner, seen := owners[q.LabpoolJob]
			if !seen && q.LabpoolJob != "" {
				var err error
				if owner, err = r.jobOwner(ctx, n.ID, q.LabpoolJob, names); err != nil {
					return fmt.Errorf("read job %s of %s: %w", q.LabpoolJob, n.Name, err)
				}
				owners[q.LabpoolJob] = owner
			}
			if owner == "" || owner != q.Owner {
				q.LabpoolJob, q.Owner = "", ""
				continue
			}
			if n.ClusterOwners == nil {
				n.ClusterOwners = map[string]string{}
			}
			n.ClusterOwners[q.Owner] = ownerName(names, q.Owner)
		}
	}
	return nil
}

// jobOwner is the owner the record of job id on node proves, one of
// members ("" when node has no such record, or it proves no member's).
func (r *Reader) jobOwner(ctx context.Context, node, id string, members map[string]string) (string, error) {
	rec, found, err := r.db.Latest(ctx, node, KindJob, id)
	if err != nil || !found {
		return "", err
	}
	var j jobs.Job
	if json.Unmarshal(rec.Data, &j) != nil || j.ID != id {
		return "", nil
	}
	return verifiedOwner(j, r.proofRule(rec, j, members)), nil
}
