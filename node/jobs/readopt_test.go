package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/containers/dockertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.Stop()
	os.Exit(code)
}

// BenchmarkReadopt measures the re-adoption a restarted agent does: list
// and inspect 100 running labpool containers, rebuild the job table and the
// GPU ledger (target: under 1 s).
func BenchmarkReadopt(b *testing.B) {
	host := dockertest.Engine(b)
	ctx := context.Background()
	cfg := containers.DefaultConfig()
	cfg.Host, cfg.Node = host, "BENCH-NODE"
	rt, err := containers.Open(ctx, cfg)
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
		c, err := rt.Run(ctx, containers.Launch{Image: dockertest.Image, Cmd: []string{"sleep", "600"},
			Labels: map[string]string{containers.LabelJob: fmt.Sprintf("bench%03d", i), containers.LabelOwner: "o",
				containers.LabelNode: cfg.Node}})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.ResetTimer()
	for b.Loop() {
		m := NewManager(Config{Node: cfg.Node}, rt, fixedGPUs(nil), nil, &memStore{}, log)
		if err := m.Adopt(ctx); err != nil {
			b.Fatal(err)
		}
		if n := len(m.List()); n != 100 {
			b.Fatalf("adopted %d jobs, want 100", n)
		}
	}
}
