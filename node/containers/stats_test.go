//go:build linux

package containers

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/docker/docker/api/types/container"
)

func TestStatsOfBusyContainer(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	l := launch("", "sh", "-c", "while :; do :; done")
	l.MemoryBytes = 128 << 20
	c, err := r.Run(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, c.ID)
	for i := range 2 { // first call measures over cpuWindow, the second since the first
		u, err := r.Stats(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("stats %d: %+v", i, u)
		// A busy loop gets one core on an idle machine, but only its share
		// of two cores when a dozen processes compete: at least 5% tells it
		// from an idle container (under 1%).
		if u.CPUPercent < 5 || u.CPUPercent > 250 {
			t.Errorf("a busy loop uses %.1f%% CPU, want up to about one core and clearly more than an idle one", u.CPUPercent)
		}
		if u.MemLimitBytes != 128<<20 || u.MemUsedBytes == 0 || u.MemUsedBytes > 128<<20 {
			t.Errorf("memory %d of %d", u.MemUsedBytes, u.MemLimitBytes)
		}
		if len(u.PIDs) < 2 { // docker-init and sh
			t.Errorf("pids %v, want init and the shell", u.PIDs)
		}
		for _, pid := range u.PIDs {
			if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err != nil {
				t.Errorf("pid %d is not a host process: %v", pid, err)
			}
		}
	}
}

func TestCgroupPIDs(t *testing.T) {
	tests := []struct {
		name, cgroup string
		procsAt      string // directory under the cgroup root that holds cgroup.procs
		want         []int
	}{
		{"v2", "0::/system.slice/docker-abc.scope\n", "system.slice/docker-abc.scope", []int{7, 42}},
		{"v1", "12:memory:/docker/abc\n8:pids:/docker/abc\n0::/\n", "pids/docker/abc", []int{7, 42}},
		{"v1 joined controllers", "3:cpu,pids:/docker/abc\n", "pids/docker/abc", []int{7, 42}},
		{"root cgroup", "0::/\n", "", nil},
		{"outside our namespace", "0::/../../docker/abc\n", "", nil},
		{"no such cgroup", "0::/gone\n", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proc, root := t.TempDir(), t.TempDir()
			os.MkdirAll(filepath.Join(proc, "7"), 0o755)
			os.WriteFile(filepath.Join(proc, "7", "cgroup"), []byte(tt.cgroup), 0o644)
			os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte("1\n7\n42\n99\n"), 0o644) // the whole machine
			if tt.procsAt != "" {
				os.MkdirAll(filepath.Join(root, tt.procsAt), 0o755)
				os.WriteFile(filepath.Join(root, tt.procsAt, "cgroup.procs"), []byte("42\n7\n"), 0o644)
			}
			got, err := cgroupPIDs(proc, root, 7)
			if !slices.Equal(got, tt.want) || (err == nil) != (tt.want != nil) {
				t.Errorf("cgroupPIDs = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestCPUAndMemoryFormulas(t *testing.T) {
	cpu := func(total, system uint64, n uint32) container.CPUStats {
		return container.CPUStats{CPUUsage: container.CPUUsage{TotalUsage: total}, SystemUsage: system, OnlineCPUs: n}
	}
	tests := []struct {
		name     string
		pre, cur container.CPUStats
		want     float64
	}{
		{"one core of two", cpu(0, 0, 2), cpu(1e9, 2e9, 2), 100},
		{"half a core of four", cpu(1e9, 4e9, 4), cpu(1.5e9, 8e9, 4), 50},
		{"idle", cpu(5, 10, 2), cpu(5, 20, 2), 0},
		{"no system time passed", cpu(5, 10, 2), cpu(9, 10, 2), 0},
		{"counter reset", cpu(9e9, 10, 2), cpu(1e9, 20, 2), 0},
	}
	for _, tt := range tests {
		if got := cpuPercent(tt.pre, tt.cur); got != tt.want {
			t.Errorf("%s: cpuPercent = %v, want %v", tt.name, got, tt.want)
		}
	}
	for _, m := range []struct {
		stats map[string]uint64
		usage uint64
		want  uint64
	}{
		{map[string]uint64{"total_inactive_file": 30, "inactive_file": 5}, 100, 70}, // cgroup v1
		{map[string]uint64{"inactive_file": 30}, 100, 70},                           // cgroup v2
		{map[string]uint64{"inactive_file": 300}, 100, 100},
		{nil, 100, 100},
	} {
		if got := memUsed(container.MemoryStats{Usage: m.usage, Stats: m.stats}); got != m.want {
			t.Errorf("memUsed(%d, %v) = %d, want %d", m.usage, m.stats, got, m.want)
		}
	}
}
