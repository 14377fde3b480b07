//go:build linux && cgo

package gpu

import (
	"context"
	"strings"
	"testing"
)

func TestSimulated(t *testing.T) {
	s, err := OpenLibrary(Simulated(3, "node-a"), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stats, err := s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 3 {
		t.Fatalf("got %d GPUs, want 3", len(stats))
	}
	seen := map[string]bool{}
	for i, g := range stats {
		if g.Index != i || g.Name != SimulatedName || !strings.HasPrefix(g.UUID, "GPU-") || seen[g.UUID] {
			t.Errorf("gpu %d: %+v", i, g)
		}
		seen[g.UUID] = true
		if g.MemTotalBytes != simMemTotal || g.MemUsedBytes == 0 || g.MemUsedBytes > g.MemTotalBytes {
			t.Errorf("gpu %d memory %d/%d", i, g.MemUsedBytes, g.MemTotalBytes)
		}
		if g.UtilPercent < 0 || g.UtilPercent > 100 || g.PowerW <= 0 || g.PowerLimitW != 700 || g.FanPercent != -1 {
			t.Errorf("gpu %d figures out of range: %+v", i, g)
		}
	}
	other, _ := OpenLibrary(Simulated(1, "node-b"), DefaultConfig())
	defer other.Close()
	if o := other.Devices(); len(o) != 1 || o[0].UUID == stats[0].UUID {
		t.Errorf("simulated GPUs of two machines share a UUID")
	}
}
