package jobs

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/node/gpu"
)

// gb10 is a DGX Spark's GPU as the Sampler reports it: the system's memory,
// unified, usedGiB of it in use (by the host and by every job, on the GPU or
// not); a running process of the GPU holds procGiB, which is part of used.
func gb10(usedGiB, procGiB uint64) gpu.Stats {
	return gpu.Stats{Index: 0, UUID: "GPU-GB10", Name: "NVIDIA GB10", MemUnified: true,
		MemTotalBytes: 119 << 30, MemUsedBytes: usedGiB << 30,
		Processes: []gpu.Process{{PID: 4242, MemBytes: procGiB << 30}}}
}

func TestGPUMemFor(t *testing.T) {
	tests := []struct {
		name string
		g    gpu.Stats
		want uint64
	}{
		{"discrete: all of it, granted whole", gpu.Stats{MemTotalBytes: 80 << 30, MemUsedBytes: 70 << 30}, 80 << 30},
		{"unified: what the system has free", gb10(40, 30), 79 << 30},
		{"unified, nothing used", gb10(0, 0), 119 << 30},
		{"unified, used past total (a bad reading): none", gpu.Stats{MemUnified: true, MemTotalBytes: 8 << 30, MemUsedBytes: 9 << 30}, 0},
	}
	for _, tt := range tests {
		if got := GPUMemFor(tt.g.MemTotalBytes, tt.g.MemUsedBytes, tt.g.MemUnified); got != tt.want {
			t.Errorf("%s: GPUMemFor = %d GiB, want %d GiB", tt.name, got>>30, tt.want>>30)
		}
	}
}

// TestUnifiedPlacement checks placement by memory on a unified GPU: it
// weighs the system's free memory, and counts a job's use once: the 30 GiB
// a running process holds on the GPU are part of the system's 40 GiB used,
// not 30 GiB more.
func TestUnifiedPlacement(t *testing.T) {
	tests := []struct {
		name     string
		g        gpu.Stats
		minGiB   uint64
		granted  bool
		errWords string
	}{
		{"fits in what is free, a process's GPU use counted once", gb10(40, 30), 70, true, ""},
		{"the host's use leaves too little", gb10(60, 0), 70, false, "59 GiB free of unified memory, less than asked"},
		{"more than the machine has", gb10(0, 0), 120, false, "less than asked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{Count: 1, MinMemBytes: tt.minGiB << 30}
			got, err := NewLedger().Grant("j1", req, []gpu.Stats{tt.g}, nil)
			if tt.granted != (err == nil) || (err == nil && len(got) != 1) {
				t.Fatalf("Grant = %v, %v; want granted %v", got, err, tt.granted)
			}
			if err != nil && !strings.Contains(err.Error(), tt.errWords) {
				t.Errorf("Grant error %q does not say %q", err, tt.errWords)
			}
			j := Job{ID: "q1", Spec: Spec{GPUs: 1, MinGPUMemBytes: tt.minGiB << 30}}
			l := NewLedger()
			l.Rekeep([]Kept{{Job: j.ID, Want: j.request()}}, []gpu.Stats{tt.g}, nil)
			if kept := l.Grants(); (len(kept) == 1) != tt.granted {
				t.Errorf("kept for the starving queued job: %+v, want kept %v", kept, tt.granted)
			}
		})
	}
}
