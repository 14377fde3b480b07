package slurm

import (
	"slices"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// A Slurm cluster offers its GPUs to alloc.Fit as Cluster units: one for
// the whole cluster (ClusterUnit) and one per partition (PartitionUnit),
// each counting the GPUs on its nodes that take jobs. Who holds how many
// of them are alloc.SlurmJob grants: one per running job per unit it has
// GPUs in, and one for the GPUs sinfo says are allocated beyond the jobs
// the queue read lists (a queue cut at QueueCap, a job of a reservation).
// Fit then counts what is free (alloc.Free) and decides, here, in the
// laptop's planner and in the grants record the cluster's agent publishes;
// how a node's state, CPUs and memory serve a job stays Slurm's (Plan).

// maxClusterGrants bounds the grants of one cluster (the grants record
// has a cap): the jobs beyond it are counted in the units' "other jobs"
// grants. A grant names no member: a job's comment is anyone's to write
// on a cluster (the planner names owners where the job's record agrees).
const maxClusterGrants = 512

// maxCardGPUs bounds the GPUs a card may say one entry (a node's GPUs of a
// type, a job) has: sums stay far from overflowing.
const maxCardGPUs = 1 << 20

// ClusterUnit is the ID of the unit of all of c's GPUs.
func ClusterUnit(c Cluster) string { return "slurm:" + c.Name }

// PartitionUnit is the ID of the unit of partition's GPUs on c.
func PartitionUnit(c Cluster, partition string) string { return "slurm:" + c.Name + "/" + partition }

// Allocation is c's GPUs as alloc units offered by node (a device ID), and
// the grants of the Slurm jobs that hold them, from c's last read.
func Allocation(c Cluster, node string) ([]alloc.Unit, []alloc.Grant) {
	return allocation(c, node, "", true)
}

// PartitionFree is how many GPUs of partition on c no Slurm job holds, as
// alloc.Free counts them on Allocation.
func PartitionFree(c Cluster, partition string) int {
	id := PartitionUnit(c, partition)
	units, grants := allocation(c, "", id, false)
	return freeIn(units, grants, id)
}

// allocation is Allocation, of the unit only alone (a partition's; ""
// every unit), its jobs' grants each named for people (named), or, for
// counting alone, gathered in one grant per unit that holds as many.
func allocation(c Cluster, node, only string, named bool) ([]alloc.Unit, []alloc.Grant) {
	index := make(map[string]int, len(c.Nodes)) // node name -> its index in c.Nodes
	takes := make([]bool, len(c.Nodes))         // the node takes jobs
	for i, n := range c.Nodes {
		index[n.Name], takes[i] = i, TakesJobs(n.State)
	}
	units := make([]alloc.Unit, 0, len(c.Partitions)+1)
	in := make([][]bool, 0, len(c.Partitions)+1) // per unit, per node of c.Nodes: it counts there
	held := make([]int, 0, len(c.Partitions)+1)  // GPUs the jobs' grants hold, per unit
	alloced := make([]int, 0, len(c.Partitions)+1)
	ids := make([][]string, 0, len(c.Partitions)+1) // each unit's ID, as a grant's Units
	add := func(id string, member func(Node) bool) {
		if slices.ContainsFunc(units, func(u alloc.Unit) bool { return u.ID == id }) {
			return // a partition named twice: one unit (a reader refuses a record listing one twice)
		}
		u := alloc.Unit{ID: id, Kind: alloc.Cluster, Node: node}
		a, counts := 0, make([]bool, len(c.Nodes))
		for i, n := range c.Nodes {
			if !takes[i] || !member(n) {
				continue
			}
			counts[i] = true
			for _, g := range n.GPUs {
				total := min(max(g.Total, 0), maxCardGPUs) // a card's counts come from the network
				u.Count = min(u.Count+total, maxCardGPUs)
				a = min(a+min(max(g.Alloc, 0), total), maxCardGPUs)
			}
		}
		units, in, held, alloced, ids = append(units, u), append(in, counts), append(held, 0), append(alloced, a), append(ids, []string{id})
	}
	if id := ClusterUnit(c); only == "" || id == only {
		add(id, func(Node) bool { return true })
	}
	for _, p := range c.Partitions {
		if id := PartitionUnit(c, p.Name); only == "" || id == only {
			add(id, func(n Node) bool { return inPartition(n, p) })
		}
	}
	capacity := 2 * len(units)
	if named {
		capacity += min(len(c.Queue)*len(units), maxClusterGrants)
	}
	grants := make([]alloc.Grant, 0, capacity)
	on := make([]int, len(units)) // of a job's nodes, those in each unit
	made := 0                     // the jobs' grants, named or not (maxClusterGrants bounds them)
	for _, q := range c.Queue {
		if q.GPUs <= 0 || !holdsGPUs(q.State) || len(q.Nodes) == 0 {
			continue
		}
		clear(on)
		for _, name := range q.Nodes {
			k, ok := index[name]
			for i := range units {
				if ok && in[i][k] {
					on[i]++
				}
			}
		}
		for i := range units {
			// Its GPUs split evenly over its nodes: Slurm's queue says no more.
			n := min(q.GPUs, maxCardGPUs) * on[i] / len(q.Nodes)
			if n <= 0 || made >= maxClusterGrants {
				continue
			}
			made++
			held[i] += n
			if named {
				h := alloc.Holder{Kind: alloc.SlurmJob, ID: q.ID, Name: "slurm job " + q.ID + " of " + q.User}
				grants = append(grants, alloc.Grant{Holder: h, Units: ids[i], GPUs: n})
			}
		}
	}
	for i := range units {
		if held[i] > 0 && !named { // counted alike: Fit sees as many GPUs held
			grants = append(grants, alloc.Grant{Holder: queueJobs, Units: ids[i], GPUs: min(held[i], maxCardGPUs)})
		}
		if rest := alloced[i] - held[i]; rest > 0 {
			grants = append(grants, alloc.Grant{Holder: otherJobs, Units: ids[i], GPUs: rest})
		}
	}
	return units, grants
}

// queueJobs holds, unnamed, the GPUs of the jobs the queue read lists.
var queueJobs = alloc.Holder{Kind: alloc.SlurmJob, ID: "queue", Name: "Slurm jobs of the queue read"}

// otherJobs holds the GPUs allocated to jobs the queue read does not list.
var otherJobs = alloc.Holder{Kind: alloc.SlurmJob, ID: "other", Name: "Slurm jobs beyond the queue read"}

func holdsGPUs(state string) bool { return state == "RUNNING" || state == "COMPLETING" }

// freeIn is how many GPUs of unit id no job holds, as alloc.Free counts.
func freeIn(units []alloc.Unit, grants []alloc.Grant, id string) int {
	for _, u := range units {
		if u.ID == id {
			return alloc.Free(u, grants, time.Time{})
		}
	}
	return 0
}
