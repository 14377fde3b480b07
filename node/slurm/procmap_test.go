package slurm

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

func TestAnnotate(t *testing.T) {
	f := newFakeProc(t)
	f.add(proc{pid: 100, cgroup: cgroupV2, env: []string{"SLURM_CLUSTER_NAME=HPC"}}) // labpool's job 31337 on hpc
	f.add(proc{pid: 101, cgroup: cgroupV1})                                          // job 4242, not labpool's
	f.add(proc{pid: 102, cgroup: cgroupUser})                                        // no job
	f.add(proc{pid: 103, cgroup: cgroupV2Node, env: []string{"SLURM_CLUSTER_NAME=other"}})
	p := NewProcs(f.root, "") // no slurm.conf: the environment names the cluster
	find := func(cluster, id string) (string, string, bool) {
		if cluster == "hpc" && id == "31337" {
			return "job-train", "alice-id", true
		}
		if id == "8" { // the same ID on the pool's cluster: not this one
			return "job-wrong", "bob-id", cluster == "hpc"
		}
		return "", "", false
	}
	gs := []gpu.Stats{
		{Index: 0, UUID: "GPU-0", Processes: []gpu.Process{{PID: 100}, {PID: 102}}},
		{Index: 1, UUID: "GPU-1", Processes: []gpu.Process{{PID: 101}}},
		{Index: 2, UUID: "GPU-2", Processes: []gpu.Process{{PID: 200}, {PID: 100}}},
		{Index: 3, UUID: "GPU-3", Processes: []gpu.Process{{PID: 103}}},
		{Index: 4, UUID: "GPU-4"},
		{Index: 5, UUID: "GPU-5", Processes: []gpu.Process{{PID: 101}}}, // job 4242 on two GPUs: both its
	}
	docker := alloc.Holder{Kind: alloc.Job, ID: "docker-job"}
	held := alloc.Holding{GPUs: map[string]alloc.Holder{"GPU-2": docker},
		Procs: map[uint32]alloc.Holder{200: {Kind: alloc.Job, ID: "docker-job", Member: "carol-id"}}}
	before := slices.Clone(gs)
	p.Annotate(gs, &held, find)
	train := alloc.Holder{Kind: alloc.SlurmJob, ID: "31337", Name: "slurm job 31337", Job: "job-train", Member: "alice-id"}
	s4242 := alloc.Holder{Kind: alloc.SlurmJob, ID: "4242", Name: "slurm job 4242"}
	s8 := alloc.Holder{Kind: alloc.SlurmJob, ID: "8", Name: "slurm job 8"}
	want := alloc.Holding{
		GPUs: map[string]alloc.Holder{"GPU-0": train, "GPU-1": s4242, "GPU-2": docker, "GPU-3": s8, "GPU-5": s4242},
		Procs: map[uint32]alloc.Holder{100: train, 101: s4242, 103: s8,
			200: {Kind: alloc.Job, ID: "docker-job", Member: "carol-id"}},
	}
	if d := cmp.Diff(want, held); d != "" {
		t.Errorf("Annotate (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, gs); d != "" {
		t.Errorf("Annotate changed the hardware reading (-before +after):\n%s", d)
	}
}

// A job whose cluster nothing names is never taken for a labpool job:
// Slurm's job IDs repeat across clusters.
func TestAnnotateUnknownCluster(t *testing.T) {
	f := newFakeProc(t)
	f.add(proc{pid: 100, cgroup: cgroupV2})
	p := NewProcs(f.root, "") // no slurm.conf, no SLURM_CLUSTER_NAME
	asked := false
	gs := []gpu.Stats{{UUID: "GPU-0", Processes: []gpu.Process{{PID: 100}}}}
	var held alloc.Holding
	p.Annotate(gs, &held, func(string, string) (string, string, bool) { asked = true; return "j", "o", true })
	if h := held.GPU("GPU-0"); asked || h.JobID() != "" || h.Scheduler() != "slurm job 31337" {
		t.Errorf("unknown cluster: asked %v, GPU held by %+v; want the Slurm job named, no labpool job", asked, h)
	}
}

// The local slurm.conf names the cluster, whatever a job's environment
// says: a job of cluster hpc cannot pass for one of another cluster.
func TestAnnotateConfClusterWins(t *testing.T) {
	f := newFakeProc(t)
	f.add(proc{pid: 100, cgroup: cgroupV2, env: []string{"SLURM_CLUSTER_NAME=other"}})
	p := NewProcs(f.root, "HPC")
	var asked string
	gs := []gpu.Stats{{Processes: []gpu.Process{{PID: 100}}}}
	p.Annotate(gs, &alloc.Holding{}, func(cluster, id string) (string, string, bool) { asked = cluster + "/" + id; return "", "", false })
	if asked != "hpc/31337" {
		t.Errorf("asked for %q; want hpc/31337", asked)
	}
}
