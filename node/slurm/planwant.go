package slurm

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// want is what a job asks of each node it runs on.
type want struct {
	nodes, gpus, cpus int
	memMB             int64
}

func wantOf(r jobs.Resources) want {
	w := want{nodes: max(1, r.Nodes), gpus: r.GPUs, cpus: max(1, int(math.Ceil(r.CPUs))), memMB: (r.MemoryBytes + 1<<20 - 1) >> 20}
	if r.Nodes > 1 || w.gpus == 0 {
		w.gpus = r.GPUsPerNode
	}
	return w
}

// String says what each node must have free: "2 GPUs, 4 CPUs and 16 GiB".
func (w want) String() string {
	parts := []string{}
	if w.gpus > 0 {
		parts = append(parts, plural(w.gpus, "GPU"))
	}
	parts = append(parts, plural(w.cpus, "CPU"))
	if w.memMB > 0 {
		parts = append(parts, mbText(w.memMB))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// nodesFor splits nodes into those big enough for w (ever) and those of
// them with w free and a state that takes jobs (now).
func (w want) nodesFor(nodes []Node) (ever, now []string) {
	ever, now = []string{}, []string{}
	for _, n := range nodes {
		if !w.fitsTotal(n) {
			continue
		}
		ever = append(ever, n.Name)
		if TakesJobs(n.State) && nodeFreeGPUs(n) >= w.gpus && n.CPUs-n.CPUsAlloc >= w.cpus &&
			(w.memMB == 0 || n.MemoryMB == 0 || n.MemoryMB-n.MemAllocMB >= w.memMB) {
			now = append(now, n.Name)
		}
	}
	return ever, now
}

// fitsTotal says whether n is big enough for w, busy or not.
func (w want) fitsTotal(n Node) bool {
	return nodeGPUs(n) >= w.gpus && n.CPUs >= w.cpus && (w.memMB == 0 || n.MemoryMB == 0 || n.MemoryMB >= w.memMB)
}

// neverFits says why only have of the partition's nodes are big enough.
func (w want) neverFits(partition string, nodes []Node, have int) string {
	if len(nodes) == 0 {
		return fmt.Sprintf("partition %s has no nodes", partition)
	}
	var gpus, cpus int
	var mem int64
	for _, n := range nodes {
		gpus, cpus, mem = max(gpus, nodeGPUs(n)), max(cpus, n.CPUs), max(mem, n.MemoryMB)
	}
	switch {
	case w.nodes > len(nodes):
		return fmt.Sprintf("partition %s has %s, %d asked", partition, plural(len(nodes), "node"), w.nodes)
	case w.gpus > gpus:
		return fmt.Sprintf("no node of partition %s has %s (at most %d)", partition, plural(w.gpus, "GPU"), gpus)
	case w.cpus > cpus:
		return fmt.Sprintf("no node of partition %s has %s (at most %d)", partition, plural(w.cpus, "CPU"), cpus)
	case w.memMB > mem:
		return fmt.Sprintf("no node of partition %s has %s of memory (at most %s)", partition, mbText(w.memMB), mbText(mem))
	}
	return fmt.Sprintf("only %s of partition %s %s %s; %d asked", plural(have, "node"), partition, hasHave(have), w, w.nodes)
}

// TakesJobs says whether a node in state (sinfo's words, maybe with flags
// such as "mixed+drain" or "idle*") may start a job now.
func TakesJobs(state string) bool {
	s := strings.ToLower(state)
	for _, bad := range []string{"down", "drain", "fail", "maint", "not_responding", "power", "reserved", "unknown", "inval", "future"} {
		if strings.Contains(s, bad) {
			return false
		}
	}
	return !strings.HasSuffix(s, "*")
}

func nodeGPUs(n Node) int {
	t := 0
	for _, g := range n.GPUs {
		t += g.Total
	}
	return t
}

func nodeFreeGPUs(n Node) int {
	f := 0
	for _, g := range n.GPUs {
		f += g.Free()
	}
	return f
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// mbText writes a size in MB (MiB, as Slurm counts) for people.
func mbText(mb int64) string {
	if mb%1024 == 0 {
		return fmt.Sprintf("%d GiB", mb/1024)
	}
	if mb > 1024 {
		return fmt.Sprintf("%.1f GiB", float64(mb)/1024)
	}
	return fmt.Sprintf("%d MiB", mb)
}

func secs(s int64) time.Duration { return time.Duration(s) * time.Second }

// FreeGPUs counts the GPUs of c that a job could get now: those on nodes
// whose state takes jobs (a drained node's GPUs are not free) that no
// Slurm job holds, as alloc.Fit counts them on Allocation.
func FreeGPUs(c Cluster) int {
	id := ClusterUnit(c)
	units, grants := allocation(c, "", id, false)
	return freeIn(units, grants, id)
}

// Usable is what of some GPUs of a cluster a job could get now: Free, not
// held by a Slurm job on nodes that take jobs (alloc.Free); OutOfService,
// by GRES type ("gpu" for untyped), those on nodes that take none (down,
// drained).
type Usable struct {
	Free         int            `json:"free"`
	OutOfService map[string]int `json:"out_of_service"`
}

// ClusterUsable is Usable over the whole cluster and over each partition
// (by name): what the UI shows, counted here once (FreeGPUs' rule).
type ClusterUsable struct {
	Usable
	Partitions map[string]Usable `json:"partitions"`
}

// UsableGPUs is c's Usable GPUs, over it and each of its partitions.
func UsableGPUs(c Cluster) ClusterUsable {
	units, grants := allocation(c, "", "", false)
	out := ClusterUsable{Usable: Usable{Free: freeIn(units, grants, ClusterUnit(c)), OutOfService: outOfService(c.Nodes)},
		Partitions: make(map[string]Usable, len(c.Partitions))}
	for _, p := range c.Partitions {
		out.Partitions[p.Name] = Usable{Free: freeIn(units, grants, PartitionUnit(c, p.Name)), OutOfService: outOfService(partitionNodes(c, p))}
	}
	return out
}

// outOfService counts the GPUs of nodes that take no jobs, by type.
func outOfService(nodes []Node) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		if TakesJobs(n.State) {
			continue
		}
		for _, g := range n.GPUs {
			t := g.Type
			if t == "" {
				t = "gpu"
			}
			out[t] += g.Total
		}
	}
	return out
}
