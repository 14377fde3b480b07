package slurm

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
)

// SubmitPlan is what a job would ask of the cluster, and whether the
// cluster can run it: ever (some nodes of its partition are big enough)
// and now (enough of them are free), or whether it would queue.
type SubmitPlan struct {
	Partition string   `json:"partition"` // the partition asked, or the cluster's default
	Args      []string `json:"args"`      // sbatch's resource options (SbatchArgs)
	Command   string   `json:"command"`   // as a person would type it: "sbatch --partition=gpu --nodes=1 --gres=gpu:2 ..."
	Fits      bool     `json:"fits"`      // the partition can ever run it
	StartsNow bool     `json:"starts_now"`
	Reason    string   `json:"reason"` // why it fits, queues or never fits
	// Nodes are the partition's nodes that could run it now (when it
	// starts now), else those that could ever.
	Nodes []string `json:"nodes"`
}

// Plan says what Slurm will be asked for r on c and whether the partition
// can run it. It reads only the cluster's card: Slurm decides in the end
// (a job of higher priority may go first).
func Plan(c Cluster, r jobs.Resources) SubmitPlan {
	p := SubmitPlan{Partition: r.Partition, Args: SbatchArgs(r), Nodes: []string{}}
	p.Command = command(p.Args)
	part, err := planPartition(c, r.Partition)
	if err != nil {
		p.Reason = err.Error()
		return p
	}
	p.Partition = part.Name
	if why := partitionRefuses(part, r); why != "" {
		p.Reason = why
		return p
	}
	w := wantOf(r)
	members := partitionNodes(c, part)
	ever, now := w.nodesFor(members)
	if len(ever) < w.nodes {
		p.Reason = w.neverFits(part.Name, members, len(ever))
		return p
	}
	p.Fits = true
	d, held := fitPartition(c, part, w)
	switch {
	case part.State != "" && !strings.EqualFold(part.State, "up"):
		p.Nodes = ever
		p.Reason = fmt.Sprintf("partition %s is %s: the job waits in Slurm's queue until it is up", part.Name, part.State)
	case !d.Fits:
		p.Nodes = ever
		p.Reason = fmt.Sprintf("will wait in Slurm's queue: partition %s has %d of the %s asked free%s; %s can run it",
			part.Name, d.Free, plural(d.Want, "GPU"), held, withStates(members, ever))
	case len(now) >= w.nodes:
		p.StartsNow, p.Nodes = true, now
		p.Reason = fmt.Sprintf("can start now: %s free on %s", w, eachOf(now, w.nodes))
		if n := pendingIn(c, part.Name); n > 0 {
			p.Reason += fmt.Sprintf(" (%s pending in %s may go first)", plural(n, "job"), part.Name)
		}
	case w.nodes == 1:
		p.Nodes = ever
		p.Reason = fmt.Sprintf("will wait in Slurm's queue: no node has %s free now; %s can run it", w, withStates(members, ever))
	default:
		p.Nodes = ever
		p.Reason = fmt.Sprintf("will wait in Slurm's queue: %d of the %d nodes asked have %s free now; %s can run it",
			len(now), w.nodes, w, withStates(members, ever))
	}
	return p
}

// fitPartition asks alloc.Fit whether part has the GPUs w asks, over all
// its nodes, free (Allocation: who holds how many), and names the first
// three Slurm jobs holding them: " (held by slurm job 12 of alice: 2,
// ...)" ("" when none does).
func fitPartition(c Cluster, part Partition, w want) (alloc.Decision, string) {
	id := PartitionUnit(c, part.Name)
	units, grants := allocation(c, "", id, false)
	d := alloc.Fit(units, grants, alloc.Request{Count: w.nodes * w.gpus}, c.Read)
	if d.Fits {
		return d, ""
	}
	_, grants = allocation(c, "", id, true) // the holders, named for people
	if len(d.Passed) == 1 {
		d.Free = int(d.Passed[0].Free)
	}
	var names []string
	more := 0
	for _, g := range grants {
		switch {
		case !slices.Contains(g.Units, id):
		case len(names) == 3:
			more++
		default:
			names = append(names, fmt.Sprintf("%s: %d", g.Holder.Name, g.GPUs))
		}
	}
	if more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	if len(names) == 0 {
		return d, ""
	}
	return d, " (held by " + strings.Join(names, ", ") + ")"
}

// eachOf names the nodes that each have what a job asks: "node1", "node1
// or node2", "each of node1, node2, node3".
// A job of several nodes takes one each of them.
func eachOf(nodes []string, want int) string {
	switch {
	case len(nodes) == 1:
		return nodes[0]
	case len(nodes) == 2 && want == 1:
		return nodes[0] + " or " + nodes[1]
	}
	return "each of " + strings.Join(nodes, ", ")
}

// SbatchArgs are the resource options sbatch is given for r (the job's
// name, output, comment and directory are the executor's), written as the
// executor writes them: --gres is per node, memory in MiB rounded up, the
// time limit in minutes rounded up.
func SbatchArgs(r jobs.Resources) []string {
	a, err := resourceArgs(r)
	if err != nil {
		return nil // Plan refuses r before it shows any
	}
	return a
}

func command(args []string) string { return strings.Join(append([]string{"sbatch"}, args...), " ") }

// withStates lists names, each node of nodes that takes no jobs now with
// its state: "n1, n3 (drained)".
func withStates(nodes []Node, names []string) string {
	out := make([]string, 0, len(names))
	for _, n := range nodes {
		if !slices.Contains(names, n.Name) {
			continue
		}
		if TakesJobs(n.State) {
			out = append(out, n.Name)
		} else {
			out = append(out, n.Name+" ("+n.State+")")
		}
	}
	return strings.Join(out, ", ")
}

// planPartition is the partition named, or the cluster's default.
func planPartition(c Cluster, name string) (Partition, error) {
	var names []string
	for _, p := range c.Partitions {
		if (name == "" && p.Default) || (name != "" && p.Name == name) {
			return p, nil
		}
		names = append(names, p.Name)
	}
	list := strings.Join(names, ", ")
	if name == "" {
		return Partition{}, fmt.Errorf("the cluster has no default partition: name one (partitions: %s)", list)
	}
	return Partition{}, fmt.Errorf("no partition %q on the cluster (partitions: %s)", name, list)
}

// partitionRefuses says why part takes no such job whatever its nodes
// have: a state that takes no new jobs, or a time limit over its maximum.
func partitionRefuses(part Partition, r jobs.Resources) string {
	switch strings.ToLower(part.State) {
	case "drain", "inactive":
		return fmt.Sprintf("partition %s is %s: Slurm takes no new jobs there", part.Name, strings.ToLower(part.State))
	}
	if limit := int64(math.Ceil(r.TimeLimit.Seconds())); part.MaxTimeS > 0 && limit > part.MaxTimeS {
		return fmt.Sprintf("time limit %s is over partition %s's maximum of %s", FormatTimeLimit(r.TimeLimit), part.Name,
			FormatTimeLimit(secs(part.MaxTimeS)))
	}
	return ""
}

// partitionNodes are the nodes of c in part, in the card's order.
func partitionNodes(c Cluster, part Partition) []Node {
	var out []Node
	for _, n := range c.Nodes {
		if inPartition(n, part) {
			out = append(out, n)
		}
	}
	return out
}

// inPartition says whether n is one of part's nodes (by its list or the
// partition's).
func inPartition(n Node, part Partition) bool {
	return slices.Contains(n.Partitions, part.Name) || slices.Contains(part.Nodes, n.Name)
}

// pendingIn counts the jobs pending in partition.
func pendingIn(c Cluster, partition string) int {
	n := 0
	for _, q := range c.Queue {
		if strings.EqualFold(q.State, "PENDING") && q.Partition == partition {
			n++
		}
	}
	return n
}
