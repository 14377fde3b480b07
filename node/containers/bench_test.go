package containers

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers/dockertest"
)

// BenchmarkLaunch compares a launch through the Runtime (hardened create,
// start, read back) with `docker run -d` of the same image and command, in
// the same run. Containers are removed outside the timer.
func BenchmarkLaunch(b *testing.B) {
	host := dockertest.Engine(b)
	r := benchRuntime(b, host)
	ctx := context.Background()
	b.Run("labpool", func(b *testing.B) {
		var ids []string
		for i := 0; b.Loop(); i++ {
			c, err := r.Run(ctx, launch(fmt.Sprintf("lp-bench-%d-%d", time.Now().UnixNano(), i), "sleep", "60"))
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, c.ID)
			if len(ids) == 10 {
				b.StopTimer()
				removeAll(r, ids)
				ids = ids[:0]
				b.StartTimer()
			}
		}
		b.StopTimer()
		removeAll(r, ids)
	})
	b.Run("docker-cli", func(b *testing.B) {
		var ids []string
		for b.Loop() {
			out, err := exec.Command("docker", "-H", host, "run", "-d", "--init", "--label", LabelManaged+"=true",
				dockertest.Image, "sleep", "60").CombinedOutput()
			if err != nil {
				b.Fatalf("docker run: %v: %s", err, out)
			}
			ids = append(ids, strings.TrimSpace(string(out)))
			if len(ids) == 10 {
				b.StopTimer()
				removeAll(r, ids)
				ids = ids[:0]
				b.StartTimer()
			}
		}
		b.StopTimer()
		removeAll(r, ids)
	})
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
