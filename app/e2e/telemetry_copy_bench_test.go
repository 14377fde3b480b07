//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/sync/peer"
)

// BenchmarkTelemetryDuringCopy (T40) measures a viewer's telemetry of an
// agent, first while nothing else runs between them, then for as long
// while the viewer copies a large file from that agent (1 GiB, copied
// again and again; LABPOOL_BENCH_COPY_MB sizes it), in one run and over
// the same link. Two measures each: the delivery delay of the agent's
// samples (the viewer's local API polled every 10 ms: when a newer sample
// first shows, less the time the agent took it; the namespaces share one
// clock) and the time of the viewer's GET /v1/node/sample of the agent,
// every 100 ms, over a connection of the viewer's identity. It reports
// both p99s of each phase, their ratios (copy / idle; the plan's target
// is "unchanged", about 1) and what the copy moved, in MB/s; the medians
// and p90s too (a p99 of 30 samples is their worst). For where the time
// goes, each phase also reports the CPU time and the run-queue wait of
// both agents and of this test (from schedstat: time runnable but waiting
// for a processor), the machine's busy cores, the UDP datagrams dropped in
// both namespaces, and, for the copy, what the receiver yielded to urgent
// work (procs.Yield) a second. LABPOOL_BENCH_PPROF=DIR writes both
// agents' CPU profiles of each phase and a 5 s execution trace from its
// middle there; LABPOOL_BENCH_AGENT_GOMAXPROCS fixes the agents'
// GOMAXPROCS. Each phase lasts LABPOOL_BENCH_WINDOW seconds (default 30).
func BenchmarkTelemetryDuringCopy(b *testing.B) {
	size := int64(1024) << 20
	if v, err := strconv.Atoi(os.Getenv("LABPOOL_BENCH_COPY_MB")); err == nil && v > 0 {
		size = int64(v) << 20
	}
	window := 30 * time.Second
	if v, err := strconv.Atoi(os.Getenv("LABPOOL_BENCH_WINDOW")); err == nil && v > 0 {
		window = time.Duration(v) * time.Second
	}
	l := newLAN(b, "agent", "viewer")
	agent, viewer := l.host("agent"), l.host("viewer")
	profiles := os.Getenv("LABPOOL_BENCH_PPROF")                   // a directory: both agents' CPU profiles and traces of each phase
	if n := os.Getenv("LABPOOL_BENCH_AGENT_GOMAXPROCS"); n != "" { // both agents', fixed (see internal/procs)
		agent.env = append(agent.env, "GOMAXPROCS="+n)
		viewer.env = append(viewer.env, "GOMAXPROCS="+n)
	}
	if profiles != "" {
		agent.env = append(agent.env, "LABPOOL_PPROF=127.0.0.1:6060")
		viewer.env = append(viewer.env, "LABPOOL_PPROF=127.0.0.1:6060")
	}
	agent.agent()
	viewer.agent()
	agent.waitDaemon()
	viewer.waitDaemon()
	joinAll(b, agent, viewer)
	waitFor(b, 20*time.Second, "viewer follows agent", func() error { return liveNodes(viewer, "agent") })
	base := b.TempDir()
	data, recv := filepath.Join(base, "data"), filepath.Join(base, "recv")
	os.MkdirAll(data, 0o755)
	os.MkdirAll(recv, 0o755)
	writeRandom(b, filepath.Join(data, "big.bin"), size)
	mustCLI(b, agent, "share", "data", data)
	mustCLI(b, viewer, "share", "--rw", "recv", recv)
	viewerID, err := peer.LoadOrCreate(viewer.data)
	if err != nil {
		b.Fatal(err)
	}
	agentID, err := peer.LoadOrCreate(agent.data)
	if err != nil {
		b.Fatal(err)
	}
	telemetry := endpointIn(b, viewer.ns, viewerID, ":0").Client(agentID.ID, []string{agent.ip + ":7420"})
	time.Sleep(3 * time.Second) // past start-up

	b.ResetTimer()
	for range b.N {
		idleUse := usageOf(agent, viewer)
		idle := measureTelemetry(b, viewer, telemetry, window, profileDuring(profiles, "idle", window, nil, agent, viewer))
		copyUse := usageOf(agent, viewer)
		var moved atomic.Int64
		busy := measureTelemetry(b, viewer, telemetry, window, profileDuring(profiles, "copy", window, func(ctx context.Context) {
			copyUntil(ctx, b, viewer, recv, &moved)
		}, agent, viewer))
		endUse := usageOf(agent, viewer)
		b.Logf("latest sample: idle, taken at %s; copy, taken at %s", idle.worst.Format("15:04:05.000"), busy.worst.Format("15:04:05.000"))
		idleUse.report(b, "idle", copyUse, window)
		copyUse.report(b, "copy", endUse, window)
		if moved.Load() == 0 {
			b.Fatal("the copy sent nothing during the copy phase: it measured nothing")
		}
		b.ReportMetric(ms(idle.delivery), "idle-delivery-p99-ms")
		b.ReportMetric(ms(busy.delivery), "copy-delivery-p99-ms")
		b.ReportMetric(ms(busy.delivery)/ms(idle.delivery), "delivery-p99-ratio")
		b.ReportMetric(ms(idle.request), "idle-request-p99-ms")
		b.ReportMetric(ms(busy.request), "copy-request-p99-ms")
		b.ReportMetric(ms(busy.request)/ms(idle.request), "request-p99-ratio")
		b.ReportMetric(float64(busy.samples), "copy-samples")
		b.ReportMetric(ms(idle.delivery50), "idle-delivery-p50-ms")
		b.ReportMetric(ms(busy.delivery50), "copy-delivery-p50-ms")
		b.ReportMetric(ms(idle.request50), "idle-request-p50-ms")
		b.ReportMetric(ms(busy.request50), "copy-request-p50-ms")
		b.ReportMetric(ms(idle.delivery90), "idle-delivery-p90-ms")
		b.ReportMetric(ms(busy.delivery90), "copy-delivery-p90-ms")
		b.ReportMetric(ms(idle.request90), "idle-request-p90-ms")
		b.ReportMetric(ms(busy.request90), "copy-request-p90-ms")
		b.ReportMetric(float64(moved.Load())/(1<<20)/window.Seconds(), "copy-MB/s")
		b.ReportMetric(float64(yielded(viewer.logText()).Milliseconds())/window.Seconds(), "copy-viewer-yielded-ms/s")
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}

// telemetryP99 is what measureTelemetry saw: the p99s of the samples'
// delivery and of the telemetry requests, and how many samples arrived.
type telemetryP99 struct {
	delivery, request     time.Duration
	delivery50, request50 time.Duration // the medians
	delivery90, request90 time.Duration
	samples               int
	worst                 time.Time // when the latest-delivered sample was taken
}

// measureTelemetry measures the viewer's telemetry of "agent" for window,
// while load (when not nil) runs; load must return once its ctx ends.
func measureTelemetry(b *testing.B, viewer *host, telemetry *http.Client, window time.Duration, load func(ctx context.Context)) telemetryP99 {
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var wg sync.WaitGroup
	if load != nil {
		wg.Go(func() { load(ctx) })
	}
	var requests []time.Duration
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			requests = append(requests, telemetryDelay(ctx, telemetry))
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
	})
	var delivery []time.Duration
	var worst time.Time
	var worstDelay time.Duration
	var last time.Time
	for ctx.Err() == nil {
		n, err := nodeByName(viewer, "agent")
		if now := time.Now(); err == nil && n.LastSeen.After(last) {
			if !last.IsZero() { // the first is as old as it was when we began
				delivery = append(delivery, now.Sub(n.LastSeen))
				if d := now.Sub(n.LastSeen); d > worstDelay {
					worst, worstDelay = n.LastSeen, d
				}
			}
			last = n.LastSeen
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	if len(delivery) < 5 || len(requests) < 5 {
		b.Fatalf("too few measures: %d samples, %d requests", len(delivery), len(requests))
	}
	return telemetryP99{delivery: percentile(delivery, 99), request: percentile(requests, 99),
		delivery50: percentile(delivery, 50), request50: percentile(requests, 50),
		delivery90: percentile(delivery, 90), request90: percentile(requests, 90), samples: len(delivery), worst: worst}
}

// copyUntil copies the agent's data/big.bin to the viewer's recv share
// again and again until ctx ends, adding to moved the bytes the copies
// sent before then; it returns once the copy under way has ended.
func copyUntil(ctx context.Context, b *testing.B, viewer *host, recv string, moved *atomic.Int64) {
	c := viewer.client()
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("big-%d.bin", i)
		tr, err := c.Copy(context.Background(), app.CopyRequest{Src: "agent:data/big.bin", Dst: "viewer:recv/" + name})
		if err != nil {
			b.Errorf("copy: %v", err)
			return
		}
		var sent int64
		for {
			if ctx.Err() == nil {
				moved.Add(tr.Progress.Sent - sent)
				sent = tr.Progress.Sent
			}
			if tr.State != "running" {
				break
			}
			if tr, err = c.Transfer(context.Background(), tr.Node, tr.ID, time.Second); err != nil {
				b.Errorf("follow the copy: %v", err)
				return
			}
		}
		if tr.State != "done" {
			b.Errorf("copy ended %s: %s", tr.State, tr.Error)
			return
		}
		b.Logf("copy %d ended at %s", i, time.Now().Format("15:04:05.000"))
		os.Remove(filepath.Join(recv, name))
	}
}

// usage is what the agents and this test process had used of the
// processors at one time: CPU time, and time spent runnable but waiting
// for a processor (the run-queue wait of all their threads, from
// /proc/PID/task/*/schedstat).
type usage struct {
	cpu, wait [3]time.Duration // agent, viewer, this test
	busy      time.Duration    // of the whole machine, all processors together
	udpDrops  [2]int64         // agent's and viewer's namespace: UDP datagrams dropped (QUIC)
}

func usageOf(agent, viewer *host) usage {
	var u usage
	for i, pid := range []int{agent.pid(), viewer.pid(), os.Getpid()} {
		u.cpu[i], u.wait[i] = schedstat(pid)
	}
	u.busy = machineBusy()
	u.udpDrops = [2]int64{udpDrops(agent), udpDrops(viewer)}
	return u
}

// report reports, per second of the phase from u to end, the CPU time
// and the run-queue wait of the agent, the viewer and the test.
func (u usage) report(b *testing.B, phase string, end usage, window time.Duration) {
	for i, who := range []string{"agent", "viewer", "test"} {
		b.ReportMetric(float64(end.cpu[i]-u.cpu[i])/float64(window), phase+"-"+who+"-cpu-cores")
		b.ReportMetric(float64(end.wait[i]-u.wait[i])/float64(window), phase+"-"+who+"-runq-wait-cores")
	}
	b.ReportMetric(float64(end.busy-u.busy)/float64(window), phase+"-machine-busy-cores")
	b.ReportMetric(float64(end.udpDrops[0]-u.udpDrops[0]+end.udpDrops[1]-u.udpDrops[1]), phase+"-udp-drops")
}

// udpDrops is the UDP datagrams h's network namespace dropped for want of
// buffer or as errors (InErrors, which counts RcvbufErrors too), from
// /proc/net/snmp.
func udpDrops(h *host) int64 {
	out, err := exec.Command("ip", "netns", "exec", h.ns, "cat", "/proc/net/snmp").Output()
	if err != nil {
		return 0
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, name := range names {
			if name == "InErrors" && i < len(f) {
				n, _ := strconv.ParseInt(f[i], 10, 64)
				return n
			}
		}
	}
	return 0
}

// machineBusy is the time all processors spent on anything but idling
// and waiting for I/O, from /proc/stat.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var ticks int64
	for i, f := range strings.Fields(line)[1:] {
		if n, err := strconv.ParseInt(f, 10, 64); err == nil && i != 3 && i != 4 && i < 8 { // not idle, iowait, guest
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100
}

// schedstat sums the CPU time and the run-queue wait of pid's threads.
func schedstat(pid int) (cpu, wait time.Duration) {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		var run, waited int64
		fmt.Sscan(string(data), &run, &waited)
		cpu += time.Duration(run)
		wait += time.Duration(waited)
	}
	return cpu, wait
}

// pid is the process id of h's running labpool.
func (h *host) pid() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proc.Process.Pid
}

// profileDuring wraps load (nil: none) so that, when dir is set, both
// hosts' agents write a CPU profile of the phase and an execution trace of
// 5 s in its middle to dir.
func profileDuring(dir, phase string, window time.Duration, load func(ctx context.Context), hosts ...*host) func(ctx context.Context) {
	if dir == "" {
		return load
	}
	return func(ctx context.Context) {
		var cmds []*exec.Cmd
		get := func(h *host, what, query string) {
			out := filepath.Join(dir, fmt.Sprintf("%s-%s.%s", h.name, phase, what))
			c := exec.Command("ip", "netns", "exec", h.ns, "curl", "-s", "-o", out, "http://127.0.0.1:6060/debug/pprof/"+query)
			if c.Start() == nil {
				cmds = append(cmds, c)
			}
		}
		for _, h := range hosts {
			get(h, "pprof", fmt.Sprintf("profile?seconds=%d", int(window.Seconds())-1))
		}
		var wg sync.WaitGroup
		if load != nil {
			wg.Go(func() { load(ctx) })
		}
		select {
		case <-time.After(window/2 - 2500*time.Millisecond):
			for _, h := range hosts {
				get(h, "trace", "trace?seconds=5")
			}
		case <-ctx.Done():
		}
		wg.Wait()
		for _, c := range cmds {
			c.Wait()
		}
	}
}

// yielded sums what the copies logged as their receiver's time stepping
// aside for urgent work (procs.Yield), from its log.
func yielded(log string) time.Duration {
	var sum time.Duration
	for _, m := range regexp.MustCompile(`msg="copy ended" .* yielded=(\S+)`).FindAllStringSubmatch(log, -1) {
		d, _ := time.ParseDuration(m[1])
		sum += d
	}
	return sum
}
