package slurmtest_test

import (
	"os"
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
	out := c.Run("sinfo", "-h", "-N", "-o", "%N %G")
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
	id := strings.TrimSpace(c.Run("sbatch", append([]string{"--parsable", "--output=" + out}, args...)...))
	if state := c.WaitJob(id, 30*time.Second); state != "COMPLETED" {
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
