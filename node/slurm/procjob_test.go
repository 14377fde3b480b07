package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJobInCgroup(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"v1", cgroupV1, "4242"},
		{"v1 several slurmd", cgroupV1Node, "77"},
		{"v2", cgroupV2, "31337"},
		{"v2 several slurmd", cgroupV2Node, "8"},
		{"docker", cgroupDocker, ""},
		{"user session", cgroupUser, ""},
		{"slurmd itself", "0::/system.slice/slurmd.service\n", ""},
		{"stepd scope, no job", "0::/system.slice/slurmstepd.scope/system\n", ""},
		{"job_ outside slurm", "0::/user.slice/user-1000.slice/job_5/step_0\n", ""},
		{"v1 job without uid", "4:cpuset:/slurm/job_5/step_0\n", ""},
		{"job ID not a number", "0::/system.slice/slurmstepd.scope/job_5x/step_0\n", ""},
		{"job ID zero", "0::/system.slice/slurmstepd.scope/job_0\n", ""},
		{"job ID past uint32", "0::/system.slice/slurmstepd.scope/job_4294967296\n", ""},
		{"bare suffix scope", "0::/_slurmstepd.scope/job_5\n", ""},
		{"dot-dot climbing out", "0::/system.slice/slurmstepd.scope/../job_5\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jobInCgroup(tt.text); got != tt.want {
				t.Errorf("jobInCgroup(%q) = %q; want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestJobOfProcess(t *testing.T) {
	f := newFakeProc(t)
	const stepd, user = 900, 1000
	// slurmstepd, root's, above a linuxproc job's processes.
	f.add(proc{pid: stepd, ppid: 1, comm: "slurmstepd", uid: 0, cgroup: cgroupUser, cmdline: "slurmstepd: [555.batch]\x00\x00\x00"})
	f.add(proc{pid: 910, ppid: stepd, comm: "bash", uid: user, cgroup: cgroupUser})
	f.add(proc{pid: 911, ppid: 910, uid: user, cgroup: cgroupUser, env: []string{"PATH=/bin", "SLURM_JOB_ID=555", "SLURM_CLUSTER_NAME=hpc"}})
	// A user's process named slurmstepd, as anyone may name one.
	f.add(proc{pid: 920, ppid: 1, comm: "slurmstepd", uid: user, cgroup: cgroupUser, cmdline: "slurmstepd: [555.0]"})
	f.add(proc{pid: 921, ppid: 920, uid: user, cgroup: cgroupUser, env: []string{"SLURM_JOB_ID=555"}})

	tests := []struct {
		name         string
		p            proc
		cluster, job string
		ok           bool
	}{
		{"cgroup v1", proc{pid: 100, uid: user, cgroup: cgroupV1}, "", "4242", true},
		{"cgroup v2 with environment", proc{pid: 101, uid: user, cgroup: cgroupV2, env: []string{"SLURM_CLUSTER_NAME=hpc", "SLURM_JOB_ID=31337"}}, "hpc", "31337", true},
		{"cgroup wins over environment", proc{pid: 102, uid: user, cgroup: cgroupV2, env: []string{"SLURM_JOB_ID=1"}}, "", "31337", true},
		{"docker", proc{pid: 103, uid: user, cgroup: cgroupDocker}, "", "", false},
		{"linuxproc under its slurmstepd", proc{pid: 911}, "hpc", "555", true},
		{"environment naming another job", proc{pid: 104, ppid: 910, uid: user, cgroup: cgroupUser, env: []string{"SLURM_JOB_ID=556"}}, "", "", false},
		{"environment under no slurmstepd", proc{pid: 105, ppid: 1, uid: user, cgroup: cgroupUser, env: []string{"SLURM_JOB_ID=555"}}, "", "", false},
		{"environment under a user's slurmstepd", proc{pid: 921}, "", "", false},
		{"environment's job not a number", proc{pid: 106, ppid: 910, uid: user, cgroup: cgroupUser, env: []string{"SLURM_JOB_ID=55a"}}, "", "", false},
		{"gone", proc{pid: 107}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.p.cgroup != "" {
				f.add(tt.p)
			}
			c, id, ok := JobOfProcess(f.root, tt.p.pid)
			if c != tt.cluster || id != tt.job || ok != tt.ok {
				t.Errorf("JobOfProcess(%d) = %q, %q, %v; want %q, %q, %v", tt.p.pid, c, id, ok, tt.cluster, tt.job, tt.ok)
			}
		})
	}
}

func TestJobInTitle(t *testing.T) {
	for in, want := range map[string]string{
		"slurmstepd: [555.batch]":     "555",
		"slurmstepd: [555.0]\x00\x00": "555",
		"slurmstepd: [555.extern]   ": "555",
		"slurmstepd: [12+1.0]":        "12",
		"slurmstepd: [555]":           "555",
		"/usr/sbin/slurmstepd\x00":    "",
		"slurmstepd: [x.0]":           "",
		"slurmstepd: [99999999999.0]": "",
		"python3\x00train.py\x00":     "",
	} {
		if got := jobInTitle(in); got != want {
			t.Errorf("jobInTitle(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestProcsCachesByPIDAndStart(t *testing.T) {
	f := newFakeProc(t)
	f.add(proc{pid: 100, start: 5, cgroup: cgroupV2})
	p := NewProcs(f.root, "HPC")
	if c, id, ok := p.JobOf(100); c != "hpc" || id != "31337" || !ok {
		t.Fatalf("JobOf = %q, %q, %v; want the local cluster, 31337", c, id, ok)
	}
	// The same process: its answer is kept (the cgroup is not read again).
	f.add(proc{pid: 100, start: 5, cgroup: cgroupV1})
	if _, id, _ := p.JobOf(100); id != "31337" {
		t.Errorf("same process asked again: job %q; want the kept 31337", id)
	}
	// The PID reused by a new process: asked anew.
	f.add(proc{pid: 100, start: 6, cgroup: cgroupV1})
	if _, id, _ := p.JobOf(100); id != "4242" {
		t.Errorf("PID reused: job %q; want 4242", id)
	}
	f.add(proc{pid: 100, start: 7, cgroup: cgroupDocker})
	if _, _, ok := p.JobOf(100); ok {
		t.Error("PID reused by a process in no job: still in one")
	}
	f.remove(100)
	if _, _, ok := p.JobOf(100); ok {
		t.Error("a gone process is in a job")
	}
}

func TestProcsSweep(t *testing.T) {
	f := newFakeProc(t)
	f.add(proc{pid: 100, start: 5, cgroup: cgroupV2})
	f.add(proc{pid: 101, start: 5, cgroup: cgroupV1})
	p := NewProcs(f.root, "")
	p.JobOf(100)
	p.JobOf(101)
	p.Sweep()
	p.JobOf(100)
	p.Sweep() // 101 was not asked since the last sweep
	if _, kept := p.known[101]; kept || len(p.known) != 1 {
		t.Errorf("after sweeps, known = %v; want only 100", p.known)
	}
}

func TestClusterInConf(t *testing.T) {
	conf := `# ClusterName=commented
SlurmctldHost=ctl(10.0.0.1)
clustername="Lab-HPC"   # quoted, any case
NodeName=n1 Gres=gpu:4
`
	if got := clusterInConf(strings.NewReader(conf)); got != "lab-hpc" {
		t.Errorf("clusterInConf = %q; want lab-hpc", got)
	}
	if got := clusterInConf(strings.NewReader("SlurmctldHost=ctl\n")); got != "" {
		t.Errorf("no ClusterName: %q", got)
	}
}

func TestConfCluster(t *testing.T) {
	dir := t.TempDir()
	conf := dir + "/slurm.conf"
	if err := os.WriteFile(conf, []byte("ClusterName=lab\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ConfCluster([]string{dir + "/absent.conf", conf}); got != "lab" {
		t.Errorf("ConfCluster = %q; want lab (the first that exists)", got)
	}
	if got := ConfCluster([]string{dir + "/absent.conf"}); got != "" {
		t.Errorf("ConfCluster with none = %q", got)
	}
}

func TestConfPathsWithAgentsConf(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=hpc2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ConfCluster(ConfPathsWith(conf)); got != "hpc2" {
		t.Errorf("ConfCluster with SLURM_CONF = %q, want hpc2", got)
	}
	if got := ConfPathsWith(""); len(got) != len(ConfPaths) {
		t.Errorf("ConfPathsWith(\"\") = %v, want ConfPaths", got)
	}
}
