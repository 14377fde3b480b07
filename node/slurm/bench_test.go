package slurm

import (
	"fmt"
	"testing"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// BenchmarkAnnotate is one sample of an 8-GPU compute node with 4
// processes per GPU, each known from an earlier sample (the steady state:
// one read of /proc/PID/stat per process).
func BenchmarkAnnotate(b *testing.B) {
	f := newFakeProc(b)
	gs := make([]gpu.Stats, 8)
	for i := range gs {
		for k := range 4 {
			pid := 100 + 4*i + k
			f.add(proc{pid: pid, start: 1, cgroup: cgroupV2, env: []string{"SLURM_CLUSTER_NAME=hpc"}})
			gs[i].Processes = append(gs[i].Processes, gpu.Process{PID: uint32(pid)})
		}
	}
	p := NewProcs(f.root, "")
	find := func(string, string) (string, string, bool) { return "job-a", "alice", true }
	b.ReportAllocs()
	for b.Loop() {
		var held alloc.Holding
		p.Annotate(gs, &held, find)
	}
}

// BenchmarkJobOfProcessMiss is one process read for the first time.
func BenchmarkJobOfProcessMiss(b *testing.B) {
	f := newFakeProc(b)
	f.add(proc{pid: 100, start: 1, cgroup: cgroupV1, env: []string{"PATH=/bin", "SLURM_CLUSTER_NAME=hpc", "SLURM_JOB_ID=4242"}})
	b.ReportAllocs()
	for b.Loop() {
		JobOfProcess(f.root, 100)
	}
}

// BenchmarkPlan plans a 2-GPU job on a cluster of 64 nodes of 8 GPUs in 4
// partitions, with a full queue (slurm.QueueCap running jobs): the cost a
// plan pays the cluster each time the Launch dialog asks.
func BenchmarkPlan(b *testing.B) {
	c := Cluster{Name: "hpc"}
	var all []string
	for i := range 64 {
		n := Node{Name: fmt.Sprintf("n%02d", i), State: "mixed", Partitions: []string{"gpu"}, CPUs: 64, MemoryMB: 512000,
			GPUs: []GPUCount{{Type: "h100", Total: 8, Alloc: 6}}}
		c.Nodes, all = append(c.Nodes, n), append(all, n.Name)
	}
	c.Partitions = []Partition{{Name: "gpu", Default: true, State: "up"}, {Name: "a", State: "up", Nodes: all[:32]},
		{Name: "b", State: "up", Nodes: all[32:]}, {Name: "debug", State: "up", Nodes: all[:4]}}
	for i := range QueueCap {
		c.Queue = append(c.Queue, QueueJob{ID: fmt.Sprint(1000 + i), User: "lab", State: "RUNNING", Partition: "gpu",
			Nodes: all[i%64 : i%64+1], GPUs: 2})
	}
	r := jobs.Resources{GPUs: 2, CPUs: 8, MemoryBytes: 64 << 30}
	b.ReportAllocs()
	for b.Loop() {
		if p := Plan(c, r); !p.StartsNow {
			b.Fatal(p.Reason)
		}
	}
}
