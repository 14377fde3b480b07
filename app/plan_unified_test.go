package app

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/node/jobs"
)

// TestPlanUnifiedMemory checks the plan's placement by GPU memory on a
// DGX Spark (GB10: unified memory, the system's 119 GiB): it weighs what the
// system has free, the same rule as the node that grants (jobs.GPUMemFor).
func TestPlanUnifiedMemory(t *testing.T) {
	spark := func(usedGiB uint64) Node {
		return Node{ID: "SPARK", Name: "spark", Online: true, Containers: true, GPUs: []GPU{{Node: "SPARK", Index: 0,
			UUID: "SPARK-gpu0", Name: "NVIDIA GB10", MemTotalBytes: 119 * gib, MemUsedBytes: usedGiB * gib, MemUnified: true}}}
	}
	tests := []struct {
		name    string
		usedGiB uint64
		minGiB  uint64
		fits    bool
		state   string
	}{
		{"70 GiB asked, 79 free", 40, 70, true, GPUFree},
		{"70 GiB asked, 59 free: the host's use counts", 60, 70, false, GPUSmall},
		{"more than the machine", 0, 120, false, GPUSmall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := spark(tt.usedGiB)
			p := plan([]Node{n}, &n, jobs.Spec{Image: "x", GPUs: 1, MinGPUMemBytes: tt.minGiB * gib}, nil)
			if p.Fits != tt.fits {
				t.Errorf("fits = %v (%s), want %v", p.Fits, p.Reason, tt.fits)
			}
			if len(p.GPUs) != 1 || p.GPUs[0].State != tt.state || !p.GPUs[0].MemUnified {
				t.Fatalf("GPUs = %+v, want one %s, unified", p.GPUs, tt.state)
			}
			if !tt.fits && !strings.Contains(p.Reason, "0 of 1 GPU free that match") {
				t.Errorf("reason %q does not say no GPU matches", p.Reason)
			}
		})
	}
}
