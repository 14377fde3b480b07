package slurm

import (
	"testing"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
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
