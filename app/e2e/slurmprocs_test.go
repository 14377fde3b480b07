//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
)

// startFakeStepd starts what a Slurm compute node running proctrack/
// linuxproc has: a root process named slurmstepd titled "slurmstepd:
// [JOB.0]" and, under it, a job's process whose environment says
// SLURM_JOB_ID and SLURM_CLUSTER_NAME. It returns the job process's PID.
func startFakeStepd(t *testing.T, job, cluster string) int {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	stepd := filepath.Join(t.TempDir(), "slurmstepd")
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stepd, b, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The job's process is a child of the stepd (sh forks for "&"), and
	// writes its own PID.
	cmd := exec.Command(stepd, "-c", `env SLURM_JOB_ID=`+job+` SLURM_CLUSTER_NAME=`+cluster+` sh -c 'echo $$ > `+pidFile+`; exec sleep 600' & wait`)
	cmd.Args[0] = "slurmstepd: [" + job + ".0]"
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var pid int
	waitFor(t, 5*time.Second, "the job's process started", func() error {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			_, err = fmt.Sscan(string(b), &pid)
		}
		return err
	})
	return pid
}

// TestSlurmProcessOnComputeNode runs an agent on NVIDIA's mock library as a
// Slurm compute node would: a real process of Slurm job 4242 (under a root
// slurmstepd, with its environment) is listed on GPU 2 by NVML. The agent
// reads /proc and names the Slurm job on the GPU and its process, in
// `gpus --json` and `gpus`, and the usage report counts it; a process of
// no Slurm job stays "outside labpool". (No cluster agent launched job 4242: it is a Slurm job
// outside labpool, named, not unknown.)
func TestSlurmProcessOnComputeNode(t *testing.T) {
	l := newLAN(t, "node1")
	node1 := l.host("node1")
	m := node1.useMockNVML("h100.yaml")
	node1.agent()
	node1.waitDaemon()
	pid := startFakeStepd(t, "4242", "hpc")
	outside := os.Getpid()
	m.setOverrides(fmt.Sprintf(`devices:
  "2":
    processes:
      - {pid: %d, type: "C", name: "python", used_memory_mib: 1024}
  "3":
    processes:
      - {pid: %d, type: "C", name: "miner", used_memory_mib: 1024}
`, pid, outside))
	g := waitGPU(t, node1, "node1", 2, "held by slurm job 4242", func(g app.GPU) error {
		if g.Holder != "slurm job 4242" || len(g.ProcessList) != 1 || g.ProcessList[0].Holder != "slurm job 4242" {
			return fmt.Errorf("holder %q, processes %+v", g.Holder, g.ProcessList)
		}
		return nil
	})
	if g.Job != "" || g.ProcessList[0].Job != "" || g.ProcessList[0].Owner != "" {
		t.Errorf("gpu 2: %+v; want no labpool job (none launched it)", g)
	}
	g = waitGPU(t, node1, "node1", 3, "with a process outside labpool", func(g app.GPU) error {
		if len(g.ProcessList) != 1 {
			return fmt.Errorf("processes %+v", g.ProcessList)
		}
		return nil
	})
	if g.Holder != "" || g.ProcessList[0].Holder != "" {
		t.Errorf("gpu 3: %+v; want a process outside labpool, in no Slurm job", g)
	}
	// The compute node records what the Slurm job holds: the report counts it.
	waitFor(t, 20*time.Second, "the report counting slurm job 4242", func() error {
		rep, err := node1.client().Report(context.Background(), app.ReportRequest{Since: 3600, By: app.ReportByJob})
		if err != nil {
			return err
		}
		for _, r := range rep.Rows {
			if r.Key == "slurm job 4242" && r.Label == "slurm job 4242" && r.GPUHoursGranted > 0 {
				return nil
			}
		}
		return fmt.Errorf("rows %+v", rep.Rows)
	})
	text, _, _ := node1.cli("gpus")
	for _, want := range []string{fmt.Sprintf("pid %d", pid), "slurm job 4242", "outside labpool"} {
		if !strings.Contains(text, want) {
			t.Errorf("labpool gpus does not say %q:\n%s", want, text)
		}
	}
}
