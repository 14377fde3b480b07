//go:build linux

package containers

import (
	"context"
	"fmt"
	"testing"

	"github.com/labpool/labpool/node/containers/dockertest"
	"github.com/labpool/labpool/node/jobs"
)

// BenchmarkAdopt measures the re-adoption a restarted agent does: list
// and inspect 100 running labpool containers, rebuild the job table and the
// GPU ledger (target: under 1 s).
func BenchmarkAdopt(b *testing.B) {
	host := dockertest.Engine(b)
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Host, cfg.Node = host, "BENCH-NODE"
	rt, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	var ids []string
	defer func() {
		for _, id := range ids {
			rt.Remove(context.Background(), id)
		}
	}()
	for i := range 100 {
		c, err := rt.Run(ctx, Launch{Image: dockertest.Image, Cmd: []string{"sleep", "600"},
			Labels: map[string]string{LabelJob: fmt.Sprintf("bench%03d", i), LabelOwner: "o", LabelNode: cfg.Node}})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	ex := NewExecutor(rt, ExecutorConfig{})
	b.ResetTimer()
	for b.Loop() {
		m := jobs.NewManager(jobs.Config{Node: cfg.Node}, ex, noGPUs{}, nil, &jobStore{}, discardLog())
		if err := m.Adopt(ctx); err != nil {
			b.Fatal(err)
		}
		if n := len(m.List()); n != 100 {
			b.Fatalf("adopted %d jobs, want 100", n)
		}
	}
}
