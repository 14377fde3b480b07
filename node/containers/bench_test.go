//go:build linux

package containers

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers/dockertest"
)

// BenchmarkLaunch compares a launch through the Runtime (hardened create,
// start, read back) with `docker run -d` of the same image, command and
// hardening flags, in the same run; the difference is labpool's overhead.
// Besides the mean it reports the median (ms-median). Containers are
// removed outside the timer.
func BenchmarkLaunch(b *testing.B) {
	host := dockertest.Engine(b)
	r := benchRuntime(b, host)
	ctx := context.Background()
	viaRuntime := func(i int) (string, error) {
		c, err := r.Run(ctx, launch(fmt.Sprintf("lp-bench-%d-%d", time.Now().UnixNano(), i), "sleep", "60"))
		return c.ID, err
	}
	args := []string{"-H", host, "run", "-d", "--init", "--cap-drop", "ALL", "--security-opt", "no-new-privileges:true",
		"--pids-limit", "4096", "--ipc", "private", "--network", "bridge", "--label", LabelManaged + "=true"}
	for _, c := range Capabilities {
		args = append(args, "--cap-add", c)
	}
	args = append(args, dockertest.Image, "sleep", "60")
	viaCLI := func(int) (string, error) {
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("docker run: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	for _, warm := range []func(int) (string, error){viaRuntime, viaCLI} { // the engine's first start is slower
		id, err := warm(0)
		if err != nil {
			b.Fatal(err)
		}
		removeAll(r, []string{id})
	}
	b.Run("labpool", func(b *testing.B) { benchLaunch(b, r, viaRuntime) })
	b.Run("docker-cli", func(b *testing.B) { benchLaunch(b, r, viaCLI) })
}

func benchLaunch(b *testing.B, r *Runtime, launch func(int) (string, error)) {
	var ids []string
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		id, err := launch(i)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		ids = append(ids, id)
		if len(ids) == 10 {
			b.StopTimer()
			removeAll(r, ids)
			ids = ids[:0]
			b.StartTimer()
		}
	}
	b.StopTimer()
	removeAll(r, ids)
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e6, "ms-median")
}

// BenchmarkReadopt measures what a restarted agent does first: List (and
// so inspect) 100 running labpool containers. Target: under 1 s.
func BenchmarkReadopt(b *testing.B) {
	host := dockertest.Engine(b)
	r := benchRuntime(b, host)
	r.cfg.Node = fmt.Sprintf("BENCH-%d", time.Now().UnixNano())
	ctx := context.Background()
	var ids []string
	defer func() { removeAll(r, ids) }()
	for i := range 100 {
		c, err := r.Run(ctx, launch(fmt.Sprintf("lp-readopt-%d-%d", time.Now().UnixNano(), i), "sleep", "600"))
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	for b.Loop() {
		cs, err := r.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(cs) != 100 {
			b.Fatalf("listed %d containers, want 100", len(cs))
		}
	}
}

func benchRuntime(b *testing.B, host string) *Runtime {
	cfg := DefaultConfig()
	cfg.Host = host
	r, err := Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// removeAll removes containers in parallel, as a cleanup.
func removeAll(r *Runtime, ids []string) {
	done := make(chan struct{})
	for _, id := range ids {
		go func() { r.Remove(context.Background(), id); done <- struct{}{} }()
	}
	for range ids {
		<-done
	}
}
