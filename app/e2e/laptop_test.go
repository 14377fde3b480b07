//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLaptopWithoutEngine runs the agent of a laptop with no Docker engine
// and no GPU beside a GPU machine: it says so in one sentence, never with
// the Docker client's dial errors, and is otherwise a full member. It joins
// the pool, launches a job on the GPU machine, opens a tunnel to it,
// copies both ways, and a launch aimed at the laptop itself is refused
// with the same sentence.
func TestLaptopWithoutEngine(t *testing.T) {
	l := newLAN(t, "gpu", "laptop")
	gpu, laptop := l.host("gpu"), l.host("laptop")
	gpu.env = []string{"LABPOOL_SIMULATE_GPUS=1"}
	laptop.env = []string{"DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "no-docker.sock")}
	gpu.docker()
	gpu.agent()
	laptop.agent()
	gpu.waitDaemon()
	laptop.waitDaemon()
	joinAll(t, gpu, laptop)
	waitFor(t, 20*time.Second, "the GPU machine live on the laptop", func() error { return liveNodes(laptop, "gpu") })

	const sentence = "no Docker engine answers here (start Docker, or let this user open its socket, to run jobs here)"
	t.Run("one plain sentence", func(t *testing.T) {
		logs := laptop.logText()
		if !strings.Contains(logs, sentence) {
			t.Errorf("the laptop's log does not say %q", sentence)
		}
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "level=DEBUG") {
				continue // the Docker client's own words belong there
			}
			for _, noise := range []string{"Cannot connect to the Docker daemon", "dial unix", "connect: no such file"} {
				if strings.Contains(line, noise) {
					t.Errorf("the laptop logs %q beyond debug: %s", noise, line)
				}
			}
		}
		waitFor(t, 20*time.Second, "the GPU machine sees the laptop without an engine", func() error {
			n, err := nodeByName(gpu, "laptop")
			if err != nil {
				return err
			}
			if n.Containers || n.ContainersError != sentence || len(n.GPUs) != 0 {
				return fmt.Errorf("laptop as gpu sees it: containers %v (%q), %d GPUs", n.Containers, n.ContainersError, len(n.GPUs))
			}
			return nil
		})
	})

	const img = "labpool-test/busybox:1"
	t.Run("launch elsewhere and open a tunnel", func(t *testing.T) {
		out := mustCLI(t, laptop, "run", "--gpus", "1", "--port", "8080", img, "httpd", "-f", "-p", "8080", "-h", "/www")
		id := lastLine(out)
		waitFor(t, 30*time.Second, "the job running on gpu", func() error {
			j, err := laptop.client().Job(t.Context(), id)
			if err != nil {
				return err
			}
			if j.State != "running" || j.NodeName != "gpu" || len(j.GPUs) != 1 {
				return fmt.Errorf("job %s on %q with GPUs %v (%s)", j.State, j.NodeName, j.GPUs, j.Error)
			}
			return nil
		})
		url := strings.TrimSpace(mustCLI(t, laptop, "open", id, "8080"))
		waitFor(t, 10*time.Second, "the page through the tunnel", func() error {
			out, err := exec.Command("ip", "netns", "exec", laptop.ns, "curl", "-sf", "--max-time", "5", url).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "labpool test page") {
				return fmt.Errorf("curl %s: %v %q", url, err, out)
			}
			return nil
		})
		mustCLI(t, laptop, "stop", id)
	})

	t.Run("copy both ways", func(t *testing.T) {
		base := t.TempDir()
		scratch, src, back := filepath.Join(base, "scratch"), filepath.Join(base, "project"), filepath.Join(base, "back")
		for _, d := range []string{scratch, back} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		makeTree(t, src)
		mustCLI(t, gpu, "share", "--rw", "scratch", scratch)
		mustCLI(t, laptop, "cp", src, "gpu:scratch/")
		sameFiles(t, src, filepath.Join(scratch, "project"))
		mustCLI(t, laptop, "cp", "gpu:scratch/project", back+"/")
		sameFiles(t, src, filepath.Join(back, "project"))
	})

	t.Run("a launch on the laptop is refused plainly", func(t *testing.T) {
		out, errOut, code := laptop.cli("run", "--node", "laptop", img, "true")
		if code == 0 {
			t.Fatalf("run --node laptop succeeded: %s", out)
		}
		if !strings.Contains(errOut, sentence) || strings.Contains(errOut, "Cannot connect") || strings.Contains(errOut, "dial unix") {
			t.Errorf("run --node laptop said %q; want one plain sentence with %q", errOut, sentence)
		}
	})
}
