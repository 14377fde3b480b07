//go:build linux

package slurmtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// gpuLine is what the jobs print: their node and CUDA_VISIBLE_DEVICES.
var gpuLine = regexp.MustCompile(`^(node\d+) gpus=(\d+(,\d+)*)$`)

func TestCluster(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{})
	if len(c.Nodes) != 2 {
		t.Fatalf("nodes = %v, want 2", c.Nodes)
	}
	out := c.Run(t, "sinfo", "-h", "-N", "-o", "%N %G")
	for _, n := range c.Nodes {
		if !strings.Contains(out, n.Name+" gpu:fake:4") {
			t.Errorf("sinfo does not list %s with 4 fake GPUs:\n%s", n.Name, out)
		}
	}

	t.Run("gres", func(t *testing.T) {
		lines := batch(t, c, "--gres=gpu:2", "--wrap", `echo "$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES"`)
		if len(lines) != 1 || len(strings.Split(gpuLine.FindStringSubmatch(lines[0])[2], ",")) != 2 {
			t.Fatalf("job printed %q, want one node with two GPU indices", lines)
		}
	})
	t.Run("two nodes", func(t *testing.T) {
		lines := batch(t, c, "--nodes=2", "--gres=gpu:2", "--wrap",
			`srun sh -c 'echo "$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES"'`)
		var nodes []string
		for _, l := range lines {
			m := gpuLine.FindStringSubmatch(l)
			if len(strings.Split(m[2], ",")) != 2 {
				t.Errorf("%s got GPUs %s, want two", m[1], m[2])
			}
			nodes = append(nodes, m[1])
		}
		slices.Sort(nodes)
		if want := []string{"node1", "node2"}; !slices.Equal(nodes, want) {
			t.Fatalf("job ran on %v, want %v", nodes, want)
		}
	})
}

// batch submits a job, waits for it to complete and returns the lines of
// its output, each checked against gpuLine.
func batch(t *testing.T, c *slurmtest.Cluster, args ...string) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "job.out")
	id := strings.TrimSpace(c.Run(t, "sbatch", append([]string{"--parsable", "--output=" + out}, args...)...))
	if state := c.WaitJob(t, id, 30*time.Second); state != "COMPLETED" {
		t.Fatalf("job %s ended %s, want COMPLETED", id, state)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, l := range lines {
		if !gpuLine.MatchString(l) {
			t.Fatalf("job printed %q, want NODE gpus=I,J", data)
		}
	}
	return lines
}

// TestClusterOnNet: on a network the test made, slurmctld runs in the
// test's namespace, the nodes join its bridge, and Close leaves the
// test's namespaces alone.
func TestClusterOnNet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	pre := fmt.Sprintf("slnet%d-", os.Getpid())
	sw, ctl := pre+"sw", pre+"ctl"
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", ctl).Run()
		exec.Command("ip", "netns", "del", sw).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", sw}, {"netns", "add", ctl},
		{"-n", sw, "link", "add", "br0", "type", "bridge"}, {"-n", sw, "link", "set", "br0", "up"},
		{"-n", ctl, "link", "add", "eth0", "type", "veth", "peer", "name", "ctl", "netns", sw},
		{"-n", sw, "link", "set", "ctl", "master", "br0", "up"},
		{"-n", ctl, "addr", "add", "10.234.0.1/24", "dev", "eth0"}, {"-n", ctl, "link", "set", "eth0", "up"},
		{"-n", ctl, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var c *slurmtest.Cluster
	t.Run("start", func(t *testing.T) {
		c = slurmtest.Start(t, slurmtest.Options{Nodes: 1, GPUsPerNode: 2, GPUType: "a100", Net: &slurmtest.Net{
			Switch: sw, Bridge: "br0", Controller: ctl, ControllerAddr: "10.234.0.1", NodeAddrs: []string{"10.234.0.11/24"}}})
		if c.Netns != ctl || len(c.Nodes) != 1 || c.Nodes[0].Addr != "10.234.0.11" {
			t.Fatalf("cluster in %s with nodes %+v", c.Netns, c.Nodes)
		}
		if out := c.Run(t, "sinfo", "-h", "-N", "-o", "%N %G"); strings.TrimSpace(out) != "node1 gpu:a100:2" {
			t.Errorf("sinfo: %q", out)
		}
		// The node answers on its address from the test's namespace.
		if out, err := c.Command(context.Background(), "scontrol", "ping").CombinedOutput(); err != nil {
			t.Errorf("scontrol ping: %v: %s", err, out)
		}
	})
	// The subtest's cleanup closed the cluster: the test's namespaces stay,
	// the node's is gone, and so is every daemon.
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, ns := range []string{sw, ctl} {
		if !strings.Contains(string(out), ns) {
			t.Errorf("namespace %s deleted by Close", ns)
		}
	}
	if c != nil && strings.Contains(string(out), c.Nodes[0].Netns) {
		t.Errorf("node namespace %s left behind", c.Nodes[0].Netns)
	}
	if pids, _ := exec.Command("ip", "netns", "pids", ctl).Output(); len(strings.TrimSpace(string(pids))) > 0 {
		t.Errorf("processes left in the controller's namespace: %s", pids)
	}
}

// TestShared: every Get returns the one cluster; Wrap runs a client in
// the controller's namespace, CommandOn a program in a node's (which has
// the node's address); Close stops it all, deletes the namespaces and the
// directory, and may be called again.
func TestShared(t *testing.T) {
	s := &slurmtest.Shared{Options: slurmtest.Options{Nodes: 1, GPUsPerNode: 1}}
	defer s.Close()
	c := s.Get(t)
	if again := s.Get(t); again != c {
		t.Fatalf("second Get = %p, want the first's %p", again, c)
	}
	sinfo := exec.Command(c.Wrap()[0], append(c.Wrap()[1:], "sinfo", "-h", "-N", "-o", "%N %G")...)
	sinfo.Env = append(os.Environ(), c.Env()...)
	if out, err := sinfo.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "node1 gpu:fake:1" {
		t.Errorf("sinfo through Wrap: %q, %v", out, err)
	}
	node := c.Nodes[0]
	if out, err := c.CommandOn(context.Background(), node, "ip", "-br", "addr", "show", "eth0").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), node.Addr+"/") {
		t.Errorf("ip addr in %s: %q, %v; want %s", node.Netns, out, err, node.Addr)
	}
	s.Close()
	s.Close()
	if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), c.Prefix) {
		t.Errorf("namespaces of %s left after Close:\n%s", c.Prefix, out)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory after Close: %v", err)
	}
}
