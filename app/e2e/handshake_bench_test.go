//go:build linux

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// floodRate is how many handshakes a second the flood opens.
const floodRate = 100

// BenchmarkHandshakeFlood opens LABPOOL_BENCH_HANDSHAKES connections (500
// by default; `make bench` asks for 10,000) at 100 a second to one agent,
// first from a stranger (a device with a valid certificate of its own, not a
// member) on 16 source addresses, which also opens 100 connections of 1000
// streams each stuck in the HTTP/3 header read (the audit's attack), then
// from a member's identity, each from its own namespace. It reports, for
// each, the agent's CPU over the flood in percent of one core (the agent's
// own idle CPU over as long is reported apart, not subtracted), its
// resident memory growth at the end and, for the stranger, at its peak,
// how long after the flood its memory came back within 4 MiB of where it
// started (-1: not within 60 s), the p99 of a member's telemetry requests
// (GET /v1/node/sample every 100 ms) during the flood, and how many
// handshakes were let through.
func BenchmarkHandshakeFlood(b *testing.B) {
	n := 500
	if s := os.Getenv("LABPOOL_BENCH_HANDSHAKES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("LABPOOL_BENCH_HANDSHAKES=%q: want a count", s)
		}
	}
	l := newLAN(b, "agent", "member", "stranger")
	agent, member, stranger := l.host("agent"), l.host("member"), l.host("stranger")
	if prof := os.Getenv("LABPOOL_BENCH_CPUPROFILE"); prof != "" {
		agent.env = append(agent.env, "LABPOOL_CPUPROFILE="+prof, "LABPOOL_CPUPROFILE_AFTER=15",
			"LABPOOL_CPUPROFILE_SECONDS="+strconv.Itoa(2*n/floodRate))
	}
	agent.agent()
	member.agent()
	agent.waitDaemon()
	member.waitDaemon()
	joinAll(b, agent, member)
	waitFor(b, 20*time.Second, "member follows agent", func() error { return liveNodes(member, "agent") })
	memberID, err := peer.LoadOrCreate(member.data)
	if err != nil {
		b.Fatal(err)
	}
	agentID, err := peer.LoadOrCreate(agent.data)
	if err != nil {
		b.Fatal(err)
	}
	strangerID, err := peer.LoadOrCreate(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	fs := newStrangerFleet(b, l, stranger, strangerID)
	fromMember := endpointIn(b, member.ns, memberID, ":0")
	pid := daemonPID(b, agent)
	target := agent.ip + ":7420"
	telemetry := fromMember.Client(agentID.ID, []string{target})
	time.Sleep(3 * time.Second) // past start-up
	window := time.Duration(n) * time.Second / floodRate

	b.ResetTimer()
	for range b.N {
		idle := measureAgent(b, pid, func() int { time.Sleep(window); return 0 })
		s := measureFlood(b, pid, telemetry, func() int { return fs.flood(target, n) })
		m := measureAgent(b, pid, func() int { return flood(fromMember, target, n) })
		b.ReportMetric(idle.cpu, "idle-cpu-%")
		b.ReportMetric(s.cpu, "stranger-cpu-%")
		b.ReportMetric(s.rssMB, "stranger-rss-growth-MB")
		b.ReportMetric(s.peakMB, "stranger-rss-peak-growth-MB")
		b.ReportMetric(s.backS, "stranger-rss-back-s")
		b.ReportMetric(s.p99ms, "member-telemetry-p99-ms")
		b.ReportMetric(float64(s.admitted), "stranger-admitted")
		b.ReportMetric(m.cpu, "member-cpu-%")
		b.ReportMetric(m.rssMB, "member-rss-growth-MB")
		b.ReportMetric(float64(m.admitted), "member-admitted")
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}

// agentCost is what the agent spent while f ran.
type agentCost struct {
	cpu      float64 // percent of one core
	rssMB    float64 // resident memory growth, MiB
	admitted int     // what f returned
}

func measureAgent(b *testing.B, pid int, f func() int) agentCost {
	rss0, cpu0, t0 := rssKB(b, pid), cpuTicks(b, pid), time.Now()
	got := f()
	cpu1, rss1 := cpuTicks(b, pid), rssKB(b, pid)
	secs := time.Since(t0).Seconds()
	return agentCost{
		cpu:      100 * float64(cpu1-cpu0) / 100 / secs, // USER_HZ = 100
		rssMB:    float64(rss1-rss0) / 1024,
		admitted: got,
	}
}

// flood opens n connections to target at floodRate a second, closing each
// once its handshake is done, and returns how many handshakes succeeded.
func flood(ep *transport.Endpoint, target string, n int) int {
	return floodAt(ep, target, n, floodRate)
}

// floodAt is flood at rate connections a second.
func floodAt(ep *transport.Endpoint, target string, n int, rate float64) int {
	var ok atomic.Int64
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for range n {
		<-tick.C
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if c, err := ep.DialAny(ctx, target); err == nil {
				ok.Add(1)
				c.Close()
			}
		})
	}
	wg.Wait()
	return int(ok.Load())
}

// endpointIn makes an endpoint speaking as id, bound to listen, whose
// socket lives in the network namespace ns (sockets stay in the namespace they were made in).
func endpointIn(b testing.TB, ns string, id *peer.Identity, listen string) *transport.Endpoint {
	b.Helper()
	type result struct {
		ep  *transport.Endpoint
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var r result
		defer func() { res <- r }()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			r.err = err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			r.err = fmt.Errorf("enter %s: %w", ns, err)
			return
		}
		cfg := transport.DefaultConfig()
		cfg.Listen, cfg.QUICOnly = listen, true
		r.ep, r.err = transport.New(id, cfg, slog.New(slog.DiscardHandler))
	}()
	r := <-res
	if r.err != nil {
		b.Fatal(r.err)
	}
	b.Cleanup(func() { r.ep.Close() })
	return r.ep
}
