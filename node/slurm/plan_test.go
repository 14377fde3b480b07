package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/jobs"
)

// planCluster is two partitions: gpu (n1 with 4 a100 GPUs, 2 allocated;
// n2 with 4, all free; n3 drained) and cpu (c1, no GPU), at most 2 days.
func planCluster() Cluster {
	a100 := func(total, alloc int) []GPUCount { return []GPUCount{{Type: "a100", Total: total, Alloc: alloc}} }
	return Cluster{
		Name: "hpc",
		Partitions: []Partition{
			{Name: "gpu", Default: true, State: "up", Nodes: []string{"n1", "n2", "n3"}, MaxTimeS: 2 * 86400},
			{Name: "cpu", State: "up", Nodes: []string{"c1"}},
			{Name: "old", State: "inactive", Nodes: []string{"c1"}},
			{Name: "maint", State: "down", Nodes: []string{"n2"}},
		},
		Nodes: []Node{
			{Name: "n1", State: "mixed", Partitions: []string{"gpu"}, CPUs: 32, CPUsAlloc: 8, MemoryMB: 256000, MemAllocMB: 64000, GPUs: a100(4, 2)},
			{Name: "n2", State: "idle", Partitions: []string{"gpu", "maint"}, CPUs: 32, MemoryMB: 256000, GPUs: a100(4, 0)},
			{Name: "n3", State: "drained", Partitions: []string{"gpu"}, CPUs: 64, MemoryMB: 512000, GPUs: a100(8, 0)},
			{Name: "c1", State: "idle", Partitions: []string{"cpu", "old"}, CPUs: 8, MemoryMB: 16000},
		},
		Queue: []QueueJob{{ID: "7", State: "PENDING", Partition: "gpu", Reason: "Priority"}},
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name      string
		r         jobs.Resources
		command   string
		fits, now bool
		nodes     []string
		reason    string // a part of the reason
	}{
		{"default partition, starts now", jobs.Resources{GPUs: 2, CPUs: 4, MemoryBytes: 16 << 30, TimeLimit: 2 * time.Hour},
			"sbatch --nodes=1 --gres=gpu:2 --cpus-per-task=4 --mem=16384M --time=120", true, true, []string{"n1", "n2"},
			"can start now: 2 GPUs, 4 CPUs and 16 GiB free on n1 or n2 (1 job pending in gpu may go first)"},
		{"only the idle node has 4 free", jobs.Resources{GPUs: 4},
			"sbatch --nodes=1 --gres=gpu:4", true, true, []string{"n2"}, "free on n2"},
		{"8 GPUs: only a drained node has them", jobs.Resources{GPUs: 8},
			"sbatch --nodes=1 --gres=gpu:8", true, false, []string{"n3"}, "will wait in Slurm's queue: partition gpu has 6 of the 8 GPUs asked free (held by Slurm jobs beyond the queue read: 2); n3 (drained) can run it"},
		{"16 GPUs never fit", jobs.Resources{GPUs: 16},
			"sbatch --nodes=1 --gres=gpu:16", false, false, []string{}, "no node of partition gpu has 16 GPUs (at most 8)"},
		{"multi-node now", jobs.Resources{Nodes: 2, GPUsPerNode: 2, Partition: "gpu"},
			"sbatch --partition=gpu --nodes=2 --ntasks-per-node=1 --gres=gpu:2", true, true, []string{"n1", "n2"}, "can start now"},
		{"multi-node queues", jobs.Resources{Nodes: 2, GPUsPerNode: 4},
			"sbatch --nodes=2 --ntasks-per-node=1 --gres=gpu:4", true, false, []string{"n1", "n2", "n3"}, "partition gpu has 6 of the 8 GPUs asked free (held by Slurm jobs beyond the queue read: 2); n1, n2, n3 (drained) can run it"},
		{"more nodes than the partition has", jobs.Resources{Nodes: 4, GPUsPerNode: 1},
			"sbatch --nodes=4 --ntasks-per-node=1 --gres=gpu:1", false, false, []string{}, "partition gpu has 3 nodes, 4 asked"},
		{"too many CPUs", jobs.Resources{GPUs: 1, CPUs: 128},
			"sbatch --nodes=1 --gres=gpu:1 --cpus-per-task=128", false, false, []string{}, "no node of partition gpu has 128 CPUs (at most 64)"},
		{"too much memory", jobs.Resources{GPUs: 1, MemoryBytes: 1 << 40},
			"sbatch --nodes=1 --gres=gpu:1 --mem=1048576M", false, false, []string{}, "has 1024 GiB of memory (at most 500 GiB)"},
		{"big nodes together", jobs.Resources{Nodes: 2, GPUsPerNode: 8},
			"sbatch --nodes=2 --ntasks-per-node=1 --gres=gpu:8", false, false, []string{}, "only 1 node of partition gpu has 8 GPUs and 1 CPU; 2 asked"},
		{"time over the maximum", jobs.Resources{GPUs: 1, TimeLimit: 72 * time.Hour},
			"sbatch --nodes=1 --gres=gpu:1 --time=4320", false, false, []string{}, "time limit 3-00:00:00 is over partition gpu's maximum of 2-00:00:00"},
		{"GPUs on the CPU partition", jobs.Resources{GPUs: 1, Partition: "cpu"},
			"sbatch --partition=cpu --nodes=1 --gres=gpu:1", false, false, []string{}, "no node of partition cpu has 1 GPU (at most 0)"},
		{"CPU job on the CPU partition", jobs.Resources{CPUs: 2.5, MemoryBytes: 1500 << 20, Partition: "cpu"},
			"sbatch --partition=cpu --nodes=1 --cpus-per-task=3 --mem=1500M", true, true, []string{"c1"}, "can start now: 3 CPUs and 1.5 GiB free on c1"},
		{"unknown partition", jobs.Resources{Partition: "nope"},
			"sbatch --partition=nope --nodes=1", false, false, []string{}, `no partition "nope" on the cluster (partitions: gpu, cpu, old, maint)`},
		{"inactive partition", jobs.Resources{Partition: "old"},
			"sbatch --partition=old --nodes=1", false, false, []string{}, "partition old is inactive: Slurm takes no new jobs there"},
		{"down partition queues", jobs.Resources{Partition: "maint", GPUs: 1},
			"sbatch --partition=maint --nodes=1 --gres=gpu:1", true, false, []string{"n2"}, "partition maint is down: the job waits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Plan(planCluster(), tt.r)
			if p.Command != tt.command || p.Fits != tt.fits || p.StartsNow != tt.now || !strings.Contains(p.Reason, tt.reason) {
				t.Errorf("Plan = %q fits %v now %v: %q;\nwant %q fits %v now %v: ...%q...", p.Command, p.Fits, p.StartsNow, p.Reason,
					tt.command, tt.fits, tt.now, tt.reason)
			}
			if diff := cmp.Diff(tt.nodes, p.Nodes); diff != "" {
				t.Errorf("Plan nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanNoDefaultPartition(t *testing.T) {
	c := planCluster()
	c.Partitions[0].Default = false
	p := Plan(c, jobs.Resources{GPUs: 1})
	if p.Fits || p.Reason != "the cluster has no default partition: name one (partitions: gpu, cpu, old, maint)" {
		t.Errorf("Plan = fits %v, %q", p.Fits, p.Reason)
	}
	if p.Command != "sbatch --nodes=1 --gres=gpu:1" {
		t.Errorf("Command = %q", p.Command)
	}
}

func TestFreeGPUs(t *testing.T) {
	// n1: 2 of 4 free; n2: 4 of 4; n3 (drained): 8 that no job gets.
	if got := FreeGPUs(planCluster()); got != 6 {
		t.Errorf("FreeGPUs = %d; want 6 (not the drained node's 8)", got)
	}
}
