package slurm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
		{Index: 0, Processes: []gpu.Process{{PID: 100}, {PID: 102}}},
		{Index: 1, Processes: []gpu.Process{{PID: 101}}},
		{Index: 2, Job: "docker-job", Processes: []gpu.Process{{PID: 200, Job: "docker-job", Owner: "carol-id"}, {PID: 100}}},
		{Index: 3, Processes: []gpu.Process{{PID: 103}}},
		{Index: 4},
	}
	p.Annotate(gs, find)
	want := []gpu.Stats{
		{Index: 0, Job: "job-train", Holder: "slurm job 31337", Processes: []gpu.Process{
			{PID: 100, Job: "job-train", Owner: "alice-id", Holder: "slurm job 31337"}, {PID: 102}}},
		{Index: 1, Holder: "slurm job 4242", Processes: []gpu.Process{{PID: 101, Holder: "slurm job 4242"}}},
		{Index: 2, Job: "docker-job", Processes: []gpu.Process{{PID: 200, Job: "docker-job", Owner: "carol-id"},
			{PID: 100, Job: "job-train", Owner: "alice-id", Holder: "slurm job 31337"}}},
		{Index: 3, Holder: "slurm job 8", Processes: []gpu.Process{{PID: 103, Holder: "slurm job 8"}}},
		{Index: 4},
	}
	if d := cmp.Diff(want, gs); d != "" {
		t.Errorf("Annotate (-want +got):\n%s", d)
	}
}

// A job whose cluster nothing names is never taken for a labpool job:
// Slurm's job IDs repeat across clusters.
func TestAnnotateUnknownCluster(t *testing.T) {
	f := newFakeProc(t)
	f.add(proc{pid: 100, cgroup: cgroupV2})
	p := NewProcs(f.root, "") // no slurm.conf, no SLURM_CLUSTER_NAME
	asked := false
	gs := []gpu.Stats{{Processes: []gpu.Process{{PID: 100}}}}
	p.Annotate(gs, func(string, string) (string, string, bool) { asked = true; return "j", "o", true })
	if asked || gs[0].Job != "" || gs[0].Holder != "slurm job 31337" {
		t.Errorf("unknown cluster: asked %v, GPU %+v; want the Slurm job named, no labpool job", asked, gs[0])
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
	p.Annotate(gs, func(cluster, id string) (string, string, bool) { asked = cluster + "/" + id; return "", "", false })
	if asked != "hpc/31337" {
		t.Errorf("asked for %q; want hpc/31337", asked)
	}
}
