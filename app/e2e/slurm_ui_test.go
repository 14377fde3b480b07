//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// slurmUIRead is what frontend/e2e/cluster_read.mjs reads of a cluster's
// panel.
type slurmUIRead struct {
	Name, Runtime, Running, Pending string
	GPUs, Partitions, Nodes         []string
	Queue                           []struct {
		ID, State, Reason, Owner string
		Labpool                  bool
	}
}

// TestSlurmUI drives a real Slurm cluster (slurmtest: slurmctld and two
// slurmd of 4 fake GPUs each) through the UI: a cluster agent (agent
// --slurm) in the controller's namespace, and a laptop in its own that
// joined the pool and runs `labpool web`, opened by Chromium
// (frontend/e2e/slurm_ui.mjs). The card shows 2 idle nodes with 0/4 GPUs,
// 0 of 8 allocated, the partition; a command job asking 2 GPUs, launched
// through the Launch dialog on the cluster, runs in Jobs on a node, logs
// two GPU indices and shows in the card (2 of 8 allocated, in the queue as
// the laptop's labpool job); Stop on its row cancels it, and squeue agrees.
// The screenshots stay in $LABPOOL_SHOTS when set.
func TestSlurmUI(t *testing.T) {
	front := filepath.Join(repoRoot(), "frontend")
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	for _, need := range []string{"/usr/bin/chromium", filepath.Join(front, "node_modules", "playwright-core")} {
		if _, err := os.Stat(need); err != nil {
			skipOrFail(t, "browser test needs "+need)
		}
	}
	l := newLAN(t, "cluster", "laptop")
	cl, laptop := l.host("cluster"), l.host("laptop")
	c := slurmtest.Start(t, slurmtest.Options{Net: &slurmtest.Net{
		Switch: l.prefix + "sw", Bridge: "br0", Controller: cl.ns, ControllerAddr: cl.ip,
		NodeAddrs: []string{fmt.Sprintf("10.231.%d.101/24", l.subnet), fmt.Sprintf("10.231.%d.102/24", l.subnet)},
	}})
	cl.env = append(cl.env, c.Env()...)
	cl.start("agent", "--name", "cluster", "--iface", "eth0", "--listen", ":7420", "--slurm", "--slurm-job-user", slurmtest.AddUser(t))
	url := laptop.web("127.0.0.1:7421")
	cl.waitDaemon()
	laptop.waitDaemon()
	joinAll(t, cl, laptop)
	waitFor(t, 20*time.Second, "the laptop follows the cluster", func() error { return liveNodes(laptop, "cluster") })

	shots := os.Getenv("LABPOOL_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	// sleep 300: the job must still run when Stop comes, however loaded this machine is.
	cmd := exec.Command("ip", "netns", "exec", laptop.ns, "node", filepath.Join(front, "e2e", "slurm_ui.mjs"),
		"--url", url, "--node", "cluster", "--cmd", `sh -c 'echo $CUDA_VISIBLE_DEVICES; sleep 300'`, "--gpus", "2",
		"--shots", shots, "--timeout", "30")
	cmd.Dir = front
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		OK                   bool
		Stage, Error, Job    string
		Idle, Busy, Machine  slurmUIRead
		Partitions           []string
		Sbatch, Plan         string
		Hosts, RunningState  string
		Log                  string
		StoppedState         string
		StoppedText          string
		StoppedExit          string
		TimeHint, Stats      string
		Shots, ConsoleErrors []string
		StagesMs             map[string]int
		Ms                   int
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("playwright: %v: %s", jerr, out)
	}
	if err != nil || !res.OK {
		t.Fatalf("slurm UI failed at %s: %v %s (screenshots in %s)\n%s", res.Stage, err, res.Error, shots, out)
	}
	t.Logf("screenshots: %v; stages (ms): %v", res.Shots, res.StagesMs)

	idle := res.Idle
	if want := []string{"node1:idle:fake 0/4", "node2:idle:fake 0/4"}; !slices.Equal(idle.Nodes, want) {
		t.Errorf("idle card: nodes %v; want %v", idle.Nodes, want)
	}
	if want := []string{"fake 0 / 8 allocated"}; !slices.Equal(idle.GPUs, want) {
		t.Errorf("idle card: GPUs %v; want %v", idle.GPUs, want)
	}
	if want := []string{"gpu:up"}; !slices.Equal(idle.Partitions, want) {
		t.Errorf("idle card: partitions %v; want %v", idle.Partitions, want)
	}
	if idle.Name != c.Name || idle.Running != "0 running" || idle.Pending != "0 pending" || len(idle.Queue) != 0 {
		t.Errorf("idle card: %q, %s, %s, queue %+v; want %s with an empty queue", idle.Name, idle.Running, idle.Pending, idle.Queue, c.Name)
	}
	if !strings.Contains(res.Sbatch, "--gres=gpu:2") {
		t.Errorf("the dialog's sbatch line %q asks no 2 GPUs", res.Sbatch)
	}
	if !strings.Contains(res.Hosts, "node1") && !strings.Contains(res.Hosts, "node2") {
		t.Errorf("the running job's hosts read %q; want a node of the cluster", res.Hosts)
	}
	if !strings.Contains(res.Log, "0,1") {
		t.Errorf("the job's log %q; want the two GPU indices 0,1", res.Log)
	}
	for _, busy := range []slurmUIRead{res.Busy, res.Machine} {
		if want := []string{"fake 2 / 8 allocated"}; !slices.Equal(busy.GPUs, want) {
			t.Errorf("card with the job running: GPUs %v; want %v", busy.GPUs, want)
		}
		if busy.Running != "1 running" || len(busy.Queue) != 1 || busy.Queue[0].State != "RUNNING" || !busy.Queue[0].Labpool || !strings.HasPrefix(busy.Queue[0].Owner, "laptop") {
			t.Errorf("card with the job running: %s, queue %+v; want 1 running, the laptop's labpool job", busy.Running, busy.Queue)
		}
	}
	if res.StoppedState != "exited" && res.StoppedState != "failed" || res.StoppedText != "cancelled" {
		t.Errorf("the stopped job reads %s %q; want it cancelled", res.StoppedState, res.StoppedText)
	}
	if res.StoppedExit != "143" {
		t.Errorf("the cancelled job's exit reads %q; want 143 (ended by SIGTERM, as a stopped container's)", res.StoppedExit)
	}
	if strings.Contains(res.Stats, "cpu") || strings.Contains(res.Stats, "0 B") {
		t.Errorf("the cluster job's stats read %q; want no CPU or memory use (Slurm reports none)", res.Stats)
	}
	if res.TimeHint != "none · e.g. 2h" {
		t.Errorf("the time limit's placeholder %q; want the partition's (none) with an example", res.TimeHint)
	}
	if len(res.ConsoleErrors) > 0 {
		t.Errorf("console errors: %v", res.ConsoleErrors)
	}

	// squeue agrees: the labpool job's Slurm job was cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := laptop.client().Jobs(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(j app.Job) bool { return j.ID == res.Job })
	if i < 0 || list[i].Container == "" {
		t.Fatalf("job %s with its Slurm ID not in the laptop's jobs: %+v", res.Job, list)
	}
	if got := c.WaitJob(t, list[i].Container, 10*time.Second); got != "CANCELLED" {
		t.Errorf("squeue says slurm job %s is %s; want CANCELLED", list[i].Container, got)
	}
}
