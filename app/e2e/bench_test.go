//go:build linux

package e2e

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkAgentVisible measures, per iteration, how long a member agent
// that was down takes to show as online in a running viewer after its
// process starts (ns/op is that median), and how long the viewer takes to
// show it offline after SIGKILL (dead-ms).
func BenchmarkAgentVisible(b *testing.B) {
	l := newLAN(b, "agent", "viewer")
	agent, viewer := l.host("agent"), l.host("viewer")
	agent.agent()
	viewer.agent()
	agent.waitDaemon()
	viewer.waitDaemon()
	joinAll(b, agent, viewer)
	waitFor(b, 20*time.Second, "agent online", func() error { return liveNodes(viewer, "agent") })
	var visible, dead []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		killed := time.Now()
		agent.kill()
		waitFor(b, 10*time.Second, "agent offline", func() error {
			n, err := nodeByName(viewer, "agent")
			if err != nil || n.Online {
				return fmt.Errorf("still online (%v)", err)
			}
			return nil
		})
		dead = append(dead, time.Since(killed))
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		agent.agent()
		waitFor(b, 20*time.Second, "agent online again", func() error {
			n, err := nodeByName(viewer, "agent")
			if err != nil || !n.Online {
				return fmt.Errorf("not online (%v)", err)
			}
			return nil
		})
		visible = append(visible, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(median(visible)), "visible-median-ms")
	b.ReportMetric(ms(slices.Max(visible)), "visible-max-ms")
	b.ReportMetric(ms(median(dead)), "dead-median-ms")
	b.ReportMetric(ms(slices.Max(dead)), "dead-max-ms")
}

// BenchmarkAgentCost runs one agent with 8 GPUs followed by 3 members for
// 20 s and reports the CPU it used (percent of one core) and its resident
// memory: everything the process does, history and alerts included. The
// GPUs are NVIDIA's mock NVML library with the H100 profile (its overrides
// re-read every second, its default), whose own work and memory count;
// LABPOOL_BENCH_GPUS=sim uses labpool's simulated GPUs instead (no NVML).
//
// LABPOOL_BENCH_FOLLOWERS=N runs N members instead of 3 (0: the agent alone,
// in no pool: the floor of its cost).
func BenchmarkAgentCost(b *testing.B) {
	names := []string{"gpu", "f1", "f2", "f3"}
	if n, err := strconv.Atoi(os.Getenv("LABPOOL_BENCH_FOLLOWERS")); err == nil && n >= 0 {
		names = []string{"gpu"}
		for i := range n {
			names = append(names, fmt.Sprintf("f%d", i+1))
		}
	}
	l := newLAN(b, names...)
	gpu := l.host("gpu")
	if os.Getenv("LABPOOL_BENCH_GPUS") == "sim" {
		gpu.env = []string{"LABPOOL_SIMULATE_GPUS=8"}
	} else {
		gpu.useMockNVML("h100.yaml")
		gpu.env = append(gpu.env, "MOCK_NVML_OVERRIDES_TTL=1s") // the last value wins
	}
	if prof := os.Getenv("LABPOOL_BENCH_CPUPROFILE"); prof != "" {
		// The profile covers the measured windows (after start-up and joining).
		gpu.env = append(gpu.env, "LABPOOL_CPUPROFILE="+prof, "LABPOOL_CPUPROFILE_HZ=1000",
			"LABPOOL_CPUPROFILE_AFTER=30", "LABPOOL_CPUPROFILE_SECONDS="+cmp.Or(os.Getenv("LABPOOL_BENCH_CPUPROFILE_SECONDS"), "60"))
	}
	if n := os.Getenv("LABPOOL_BENCH_GOMAXPROCS"); n != "" { // the agent idles on one P unless told
		gpu.env = append(gpu.env, "GOMAXPROCS="+n)
	}
	if n := os.Getenv("LABPOOL_BENCH_GOGC"); n != "" {
		gpu.env = append(gpu.env, "GOGC="+n)
	}
	if addr := os.Getenv("LABPOOL_BENCH_PPROF"); addr != "" { // e.g. 127.0.0.1:6060, inside gpu's namespace
		gpu.env = append(gpu.env, "LABPOOL_PPROF="+addr)
	}
	for _, h := range l.hosts {
		h.agent()
		h.waitDaemon()
	}
	if len(l.hosts) > 1 {
		joinAll(b, l.hosts...)
	}
	for _, h := range l.hosts[1:] {
		waitFor(b, 20*time.Second, h.name+" follows gpu", func() error { return liveNodes(h, "gpu") })
	}
	pid := daemonPID(b, gpu)
	time.Sleep(3 * time.Second) // past start-up
	const window = 20 * time.Second
	b.ResetTimer()
	// Every window counts: the mean over all of them, and the busiest.
	var pcts []float64
	for range b.N {
		cpu0 := cpuTicks(b, pid)
		time.Sleep(window)
		cpu1 := cpuTicks(b, pid)
		pcts = append(pcts, 100*float64(cpu1-cpu0)/100/window.Seconds()) // USER_HZ = 100
	}
	b.StopTimer()
	var sum float64
	for _, p := range pcts {
		sum += p
	}
	b.ReportMetric(sum/float64(len(pcts)), "cpu-%-of-core")
	b.ReportMetric(slices.Max(pcts), "cpu-%-max-window")
	b.ReportMetric(float64(rssKB(b, pid))/1024, "rss-MB")
	b.ReportMetric(0, "ns/op")
}

// joinAll makes hosts[0] create a pool and the others join it by mDNS.
func joinAll(b testing.TB, hosts ...*host) {
	b.Helper()
	out, errOut, code := hosts[0].cli("pool", "create")
	if code != 0 {
		b.Fatalf("pool create: %s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	joinCode := lines[len(lines)-1]
	for _, h := range hosts[1:] {
		if _, errOut, code := h.cli("pool", "join", joinCode); code != 0 {
			b.Fatalf("%s: pool join: %s", h.name, errOut)
		}
	}
}

// daemonPID reads the pid the daemon wrote into its lock file.
func daemonPID(b testing.TB, h *host) int {
	data, err := os.ReadFile(filepath.Join(h.data, "daemon.lock"))
	if err != nil {
		b.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		b.Fatal(err)
	}
	return pid
}

// cpuTicks is utime+stime of pid in clock ticks.
func cpuTicks(b testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

func rssKB(b testing.TB, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb
		}
	}
	return 0
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkLaunchOverhead compares, in one run on the same engine, the time
// `labpool run` takes from the laptop's CLI to a running container on a
// pooled machine with `docker run -d` of the same image on that machine.
// It reports both medians and the agent's overhead (their difference).
func BenchmarkLaunchOverhead(b *testing.B) {
	l := newLAN(b, "gpu", "laptop")
	gpu, laptop := l.host("gpu"), l.host("laptop")
	sock := gpu.docker()
	gpu.agent()
	laptop.agent()
	gpu.waitDaemon()
	laptop.waitDaemon()
	joinAll(b, gpu, laptop)
	waitFor(b, 20*time.Second, "gpu online", func() error { return liveNodes(laptop, "gpu") })
	const img = "labpool-test/busybox:1"
	clean := func() {
		ids, _ := exec.Command("docker", "-H", sock, "ps", "-aq").Output()
		if f := strings.Fields(string(ids)); len(f) > 0 {
			exec.Command("docker", append([]string{"-H", sock, "rm", "-f"}, f...)...).Run()
		}
	}
	var lp, dk []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		clean()
		start := time.Now()
		if out, errOut, code := laptop.cli("run", "--node", "gpu", img, "sleep", "600"); code != 0 {
			b.Fatalf("labpool run: %s%s", out, errOut)
		}
		lp = append(lp, time.Since(start))
		start = time.Now()
		if out, err := exec.Command("ip", "netns", "exec", gpu.ns, "docker", "-H", sock, "run", "-d", "--init", img, "sleep", "600").CombinedOutput(); err != nil {
			b.Fatalf("docker run: %v %s", err, out)
		}
		dk = append(dk, time.Since(start))
	}
	clean()
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(median(lp)), "labpool-run-ms")
	b.ReportMetric(ms(median(dk)), "docker-run-ms")
	b.ReportMetric(ms(median(lp)-median(dk)), "overhead-ms")
}
