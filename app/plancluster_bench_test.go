package app

import (
	"fmt"
	"testing"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// BenchmarkPlanCluster plans a 2-GPU job on a cluster machine named, whose
// queue is full (slurm.QueueCap running jobs on 64 nodes of 8 GPUs): what
// the Launch dialog pays per answer for a cluster.
func BenchmarkPlanCluster(b *testing.B) {
	c := hpcCluster()
	c.Nodes, c.Queue = nil, nil
	var all []string
	for i := range 64 {
		c.Nodes = append(c.Nodes, slurm.Node{Name: fmt.Sprintf("n%02d", i), State: "mixed", Partitions: []string{"gpu"}, CPUs: 64,
			MemoryMB: 512000, GPUs: []slurm.GPUCount{{Type: "a100", Total: 8, Alloc: 6}}})
		all = append(all, c.Nodes[i].Name)
	}
	c.Partitions[0].Nodes = all
	for i := range slurm.QueueCap {
		c.Queue = append(c.Queue, slurm.QueueJob{ID: fmt.Sprint(1000 + i), User: "lab", State: "RUNNING", Partition: "gpu",
			Nodes: all[i%64 : i%64+1], GPUs: 2})
	}
	hpc := Node{ID: hpcID, Name: "hpc", Online: true, GPUs: []GPU{}, Cluster: c}
	spec := jobs.Spec{Cmd: []string{"x"}, GPUs: 2}
	b.ReportAllocs()
	for b.Loop() {
		if p := plan([]Node{hpc}, &hpc, spec, nil); !p.Fits {
			b.Fatal(p.Reason)
		}
	}
}
