//go:build linux && cgo

package gpu_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// sysMem is a fake of the system's memory meter: what a unified GPU shows
// as its own.
type sysMem struct {
	mu          sync.Mutex
	total, used uint64
	err         error
	calls       int
}

func (m *sysMem) read() (total, used uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return m.total, m.used, m.err
}

func (m *sysMem) set(used uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used, m.err = used, err
}

// gb10 makes d answer as a DGX Spark's GB10 does: NOT_SUPPORTED for both
// memory infos.
func gb10(d *gputest.Device) {
	d.Name = "NVIDIA GB10"
	d.Memory = nvml.Memory{}
	d.Fail["GetMemoryInfo"] = nvml.ERROR_NOT_SUPPORTED
	d.Fail["GetMemoryInfo_v2"] = nvml.ERROR_NOT_SUPPORTED
}

func TestUnifiedMemory(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(d *gputest.Device)
		sysErr      error
		wantUnified bool
		wantTotal   uint64
		wantUsed    uint64
		wantErr     string // in Stats.Error
	}{
		{"discrete GPU: NVML's memory", func(d *gputest.Device) {}, nil, false, 80 << 30, 512 << 20, ""},
		{"unified: the system's memory", gb10, nil, true, 119 << 30, 40 << 30, ""},
		{"unified, system meter fails: said, zero", gb10, errors.New("open /proc/meminfo: no such file"), true, 0, 0,
			"read system memory (unified): open /proc/meminfo: no such file"},
		{"v2 only not supported: v1, not unified", func(d *gputest.Device) {
			d.Fail["GetMemoryInfo_v2"] = nvml.ERROR_FUNCTION_NOT_FOUND
		}, nil, false, 80 << 30, 512 << 20, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := gputest.NewLibrary(1)
			tt.setup(lib.Devices[0])
			mem := &sysMem{total: 119 << 30, used: 40 << 30, err: tt.sysErr}
			cfg := gpu.DefaultConfig()
			cfg.SystemMemory = mem.read
			s, err := gpu.OpenLibrary(lib, cfg)
			if err != nil {
				t.Fatalf("OpenLibrary: %v", err)
			}
			defer s.Close()
			if got := s.Devices()[0]; got.MemUnified != tt.wantUnified || got.MemTotalBytes != tt.wantTotal {
				t.Errorf("Info: unified %v, total %d; want %v, %d", got.MemUnified, got.MemTotalBytes, tt.wantUnified, tt.wantTotal)
			}
			stats, err := s.Sample(context.Background())
			if err != nil {
				t.Fatalf("Sample: %v", err)
			}
			g := stats[0]
			if g.MemUnified != tt.wantUnified || g.MemTotalBytes != tt.wantTotal || g.MemUsedBytes != tt.wantUsed {
				t.Errorf("Stats: unified %v, %d / %d; want %v, %d / %d", g.MemUnified, g.MemUsedBytes, g.MemTotalBytes,
					tt.wantUnified, tt.wantUsed, tt.wantTotal)
			}
			if !strings.Contains(g.Error, tt.wantErr) || (tt.wantErr == "" && g.Error != "") {
				t.Errorf("Stats.Error = %q, want %q", g.Error, tt.wantErr)
			}
			if !tt.wantUnified && mem.calls != 0 {
				t.Errorf("a discrete GPU read the system's memory %d times", mem.calls)
			}
		})
	}
}

// TestUnifiedMemoryFollowsSystem checks that each sample reads the system's
// memory again, and that NVML's memory is not asked again once it said
// NOT_SUPPORTED.
func TestUnifiedMemoryFollowsSystem(t *testing.T) {
	lib := gputest.NewLibrary(1)
	gb10(lib.Devices[0])
	mem := &sysMem{total: 119 << 30, used: 10 << 30}
	cfg := gpu.DefaultConfig()
	cfg.SystemMemory = mem.read
	s, err := gpu.OpenLibrary(lib, cfg)
	if err != nil {
		t.Fatalf("OpenLibrary: %v", err)
	}
	defer s.Close()
	for _, used := range []uint64{10 << 30, 90 << 30, 3 << 30} {
		mem.set(used, nil)
		stats, err := s.Sample(context.Background())
		if err != nil {
			t.Fatalf("Sample: %v", err)
		}
		if got := stats[0].MemUsedBytes; got != used {
			t.Errorf("used %d, want %d", got, used)
		}
	}
	if n := lib.Devices[0].Calls("GetMemoryInfo_v2") + lib.Devices[0].Calls("GetMemoryInfo"); n > 1 {
		t.Errorf("NVML's memory asked %d times after NOT_SUPPORTED, want at most once (in Open)", n)
	}
}
