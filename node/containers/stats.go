package containers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// cpuSample is one cumulative CPU reading of a container.
type cpuSample struct {
	at    time.Time
	stats container.CPUStats
}

// cpuWindow is how long Stats waits between two readings when it has no
// recent one to compare with.
const cpuWindow = 200 * time.Millisecond

// Stats reads the container's CPU and memory use once, and the host PIDs of
// its processes. CPU is the share of one core (100 = one full core) since
// the previous Stats of the same container; a first call measures over
// cpuWindow.
func (r *Runtime) Stats(ctx context.Context, id string) (Usage, error) {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return Usage{}, err
	}
	s, err := r.statsOnce(ctx, id)
	if err != nil {
		return Usage{}, err
	}
	running := ins.State != nil && ins.State.Running
	pre, ok := r.previous(id, s)
	if !ok && running {
		t := time.NewTimer(cpuWindow)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Usage{}, fmt.Errorf("read stats of %s: %w", shortID(id), ctx.Err())
		}
		pre = s.CPUStats
		if s, err = r.statsOnce(ctx, id); err != nil {
			return Usage{}, err
		}
		r.previous(id, s)
		ok = true
	}
	u := Usage{MemLimitBytes: s.MemoryStats.Limit, MemUsedBytes: memUsed(s.MemoryStats)}
	if ok && running {
		u.CPUPercent = cpuPercent(pre, s.CPUStats)
		u.PIDs = r.pids(ctx, id, ins.State.Pid)
	}
	return u, nil
}

func (r *Runtime) statsOnce(ctx context.Context, id string) (container.StatsResponse, error) {
	var s container.StatsResponse
	ctx, cancel := r.bounded(ctx)
	defer cancel()
	resp, err := r.api.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return s, fmt.Errorf("read stats of %s: %w", shortID(id), explain(err, ""))
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("decode stats of %s: %w", shortID(id), err)
	}
	return s, nil
}

// previous returns the reading to compute CPU use against and records s as
// the next one. Docker's own precpu_stats wins when the engine fills it
// (one-shot readings leave it empty).
func (r *Runtime) previous(id string, s container.StatsResponse) (container.CPUStats, bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.cpu[id]
	r.cpu[id] = cpuSample{at: now, stats: s.CPUStats}
	for k, v := range r.cpu {
		if now.Sub(v.at) > time.Minute {
			delete(r.cpu, k)
		}
	}
	switch {
	case s.PreCPUStats.SystemUsage > 0:
		return s.PreCPUStats, true
	case ok && now.Sub(last.at) < 30*time.Second && last.stats.SystemUsage < s.CPUStats.SystemUsage:
		return last.stats, true
	}
	return container.CPUStats{}, false
}

func (r *Runtime) forget(id string) {
	r.mu.Lock()
	delete(r.cpu, id)
	r.mu.Unlock()
}

// cpuPercent is the docker CLI's formula: the container's share of the
// host's CPU time between two readings, times the number of CPUs.
func cpuPercent(pre, cur container.CPUStats) float64 {
	cpu := float64(cur.CPUUsage.TotalUsage) - float64(pre.CPUUsage.TotalUsage)
	sys := float64(cur.SystemUsage) - float64(pre.SystemUsage)
	n := float64(cur.OnlineCPUs)
	if n == 0 {
		n = float64(len(cur.CPUUsage.PercpuUsage))
	}
	if cpu <= 0 || sys <= 0 || n == 0 {
		return 0
	}
	return cpu / sys * n * 100
}

// memUsed is what `docker stats` shows: usage less the inactive page cache
// (total_inactive_file on cgroup v1, inactive_file on v2).
func memUsed(m container.MemoryStats) uint64 {
	cache, ok := m.Stats["total_inactive_file"]
	if !ok {
		cache = m.Stats["inactive_file"]
	}
	if cache < m.Usage {
		return m.Usage - cache
	}
	return m.Usage
}

// pids returns the host PIDs of the container's processes: from its cgroup
// when this process shares the engine's view of /proc, else from Docker's
// top. initPID is the container's first process as the engine sees it.
func (r *Runtime) pids(ctx context.Context, id string, initPID int) []int {
	if ps, err := cgroupPIDs("/proc", "/sys/fs/cgroup", initPID); err == nil && slices.Contains(ps, initPID) {
		return ps
	}
	ctx, cancel := r.bounded(ctx)
	defer cancel()
	top, err := r.api.ContainerTop(ctx, id, []string{"-eo", "pid"})
	if err != nil {
		return nil
	}
	return topPIDs(top)
}

// topPIDs reads the PID column of `docker top`.
func topPIDs(top container.TopResponse) []int {
	col := slices.IndexFunc(top.Titles, func(t string) bool { return strings.EqualFold(t, "PID") })
	if col < 0 {
		return nil
	}
	var out []int
	for _, p := range top.Processes {
		if col < len(p) {
			if pid, err := strconv.Atoi(strings.TrimSpace(p[col])); err == nil {
				out = append(out, pid)
			}
		}
	}
	slices.Sort(out)
	return out
}

// cgroupPIDs lists the processes in pid's cgroup: the unified (v2)
// hierarchy, or the v1 pids controller.
func cgroupPIDs(proc, cgroupRoot string, pid int) ([]int, error) {
	if pid <= 0 {
		return nil, errors.New("no process")
	}
	data, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, err
	}
	var candidates []string
	for line := range strings.Lines(string(data)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		switch {
		case len(f) != 3 || f[2] == "/" || strings.Contains(f[2], ".."):
			// a container never sits in the root cgroup; ".." is outside our view
		case f[0] == "0" && f[1] == "":
			candidates = append(candidates, filepath.Join(cgroupRoot, f[2]))
		case slices.Contains(strings.Split(f[1], ","), "pids"):
			candidates = append(candidates, filepath.Join(cgroupRoot, "pids", f[2]))
		}
	}
	for _, dir := range candidates {
		if out, err := readPIDs(filepath.Join(dir, "cgroup.procs")); err == nil && len(out) > 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("no cgroup of process %d under %s", pid, cgroupRoot)
}

func readPIDs(path string) ([]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out, nil
}
