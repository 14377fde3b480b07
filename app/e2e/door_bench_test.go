//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// The stream part of the stranger's flood: streamConns connections of
// streamsEach streams, spread over fleetSize source addresses.
const (
	fleetSize   = 16
	streamConns = 100
	streamsEach = 1000
)

// strangerFleet is one stranger on fleetSize addresses of its namespace:
// an endpoint (for handshakes) and a raw QUIC attacker (for streams) on each.
type strangerFleet struct {
	eps  []*transport.Endpoint
	atts []*attacker
}

// newStrangerFleet adds fleetSize addresses (.100 on) to h's interface.
func newStrangerFleet(b testing.TB, l *lan, h *host, id *peer.Identity) *strangerFleet {
	b.Helper()
	f := &strangerFleet{}
	prefix := h.ip[:len(h.ip)-len(lastOctet(h.ip))]
	for i := range fleetSize {
		ip := fmt.Sprintf("%s%d", prefix, 100+i)
		l.ip("-n", h.ns, "addr", "add", ip+"/24", "dev", "eth0")
		f.eps = append(f.eps, endpointIn(b, h.ns, id, ip+":0"))
		f.atts = append(f.atts, newAttacker(b, h.ns, ip, id))
	}
	return f
}

func lastOctet(ip string) string {
	for i := len(ip) - 1; i >= 0; i-- {
		if ip[i] == '.' {
			return ip[i+1:]
		}
	}
	return ip
}

// flood opens n handshakes at floodRate a second, round robin over the
// fleet's addresses, and meanwhile streamConns connections of streamsEach
// stuck streams, one every 50 ms; it returns how many handshakes succeeded
// once every connection has ended.
func (f *strangerFleet) flood(target string, n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex // guards conns
	var conns []*quic.Conn
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := range streamConns {
			<-tick.C
			wg.Go(func() {
				c, err := f.atts[i%len(f.atts)].tryDial(target, 0)
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				floodStreams(c, streamsEach)
			})
		}
	})
	admitted := floodFrom(f.eps, target, n)
	mu.Lock()
	for _, c := range conns {
		c.CloseWithError(0, "")
	}
	mu.Unlock()
	wg.Wait()
	return admitted
}

// floodFrom is flood over several endpoints, round robin.
func floodFrom(eps []*transport.Endpoint, target string, n int) int {
	per := make([]int, len(eps))
	for i := range n {
		per[i%len(eps)]++
	}
	var wg sync.WaitGroup
	got := make([]int, len(eps))
	for i, ep := range eps {
		wg.Go(func() { got[i] = floodAt(ep, target, per[i], floodRate/float64(len(eps))) })
	}
	wg.Wait()
	total := 0
	for _, g := range got {
		total += g
	}
	return total
}

// floodCost is what the agent spent on a stranger's flood, and what a
// member saw meanwhile.
type floodCost struct {
	agentCost
	peakMB float64 // resident memory growth at its peak during the flood, MiB
	backS  float64 // seconds after the flood until within 4 MiB of before; -1: not in 60 s
	p99ms  float64 // p99 of the member's telemetry requests during the flood
}

// measureFlood measures f as measureAgent does, sampling the agent's
// memory every 100 ms and a member's telemetry request every 100 ms (none
// with member nil) meanwhile, then waits (60 s at most) for the memory to come back.
func measureFlood(b *testing.B, pid int, member *http.Client, f func() int) floodCost {
	rss0 := rssKB(b, pid)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var peak int64
	var lat []time.Duration
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			peak = max(peak, rssKB(b, pid))
			if member != nil {
				lat = append(lat, telemetryDelay(ctx, member))
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
	})
	c := floodCost{agentCost: measureAgent(b, pid, f)}
	cancel()
	wg.Wait()
	c.peakMB = float64(peak-rss0) / 1024
	if len(lat) > 0 {
		c.p99ms = ms(percentile(lat, 99))
	}
	c.backS = -1
	end := time.Now()
	for time.Since(end) < time.Minute {
		if rssKB(b, pid) <= rss0+4<<10 {
			c.backS = time.Since(end).Seconds()
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return c
}

// telemetryDelay is how long the member's request for the agent's latest
// sample took; a failed one counts as 2 s.
func telemetryDelay(ctx context.Context, c *http.Client) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer/v1/node/sample", nil)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 2 * time.Second
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 2 * time.Second
	}
	return time.Since(start)
}

// BenchmarkPreTLSFlood opens LABPOOL_BENCH_PRETLS TCP connections (20,000
// by default) to an agent's data port (TCP 7420) from a stranger on 16
// addresses, none of them sending a ClientHello, and holds them all for 3 s
// after the last one (the audit's attack). It reports the agent's resident
// memory growth at its peak, how long after the flood its memory came back
// within 4 MiB of where it started (-1: not within 60 s), its open
// descriptors before and at their peak, the lines of its log that say
// "too many open files", how many connections the stranger made, and
// whether a device that joins afterwards by mDNS alone gets in (1) or not
// (0). The stranger's side is held by helper processes (TestFloodHelper),
// each within its own descriptor limit; nothing raises a limit.
func BenchmarkPreTLSFlood(b *testing.B) {
	n := 20000
	if s := os.Getenv("LABPOOL_BENCH_PRETLS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("LABPOOL_BENCH_PRETLS=%q: want a count", s)
		}
	}
	l := newLAN(b, "agent", "stranger", "late")
	agent, stranger, late := l.host("agent"), l.host("stranger"), l.host("late")
	agent.agent()
	agent.waitDaemon()
	joinCode := createPool(b, agent)
	pid := daemonPID(b, agent)
	ips := fleetAddrs(l, stranger, 16)
	target := agent.ip + ":7420"
	time.Sleep(3 * time.Second) // past start-up

	b.ResetTimer()
	for range b.N {
		fds0 := fdCount(b, pid)
		var fdPeak int
		var made int
		c := measureFlood(b, pid, nil, func() int {
			stop := sampleEvery(100*time.Millisecond, func() { fdPeak = max(fdPeak, fdCount(b, pid)) })
			var release func()
			made, release = tcpFloodIn(b, stranger.ns, ips, target, n)
			time.Sleep(3 * time.Second)
			stop()
			release()
			return made
		})
		late.agent()
		late.waitDaemon()
		joined := 1.0
		if _, errOut, code := late.cli("pool", "join", joinCode); code != 0 {
			b.Logf("late: pool join by mDNS after the flood: %s", errOut)
			joined = 0
		}
		b.ReportMetric(c.peakMB, "rss-peak-growth-MB")
		b.ReportMetric(c.backS, "rss-back-s")
		b.ReportMetric(float64(fds0), "fds-before")
		b.ReportMetric(float64(fdPeak), "fds-peak")
		b.ReportMetric(float64(strings.Count(agent.log.String(), "too many open files")), "emfile-log-lines")
		b.ReportMetric(float64(made), "stranger-conns")
		b.ReportMetric(joined, "mdns-join-ok")
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDoorHogJoin hogs an agent's door from 40 addresses of a
// stranger in the joiner's /24, and then times a real `pool join CODE
// ADDR` from a fresh machine in the same /24: the seconds it took and
// whether it succeeded (1) or not (0). Its patterns:
//   - every-4s (the audit's first): each address connects and sends a
//     request every 4 s (and connects again whenever it is closed);
//   - open-requests (the audit's second): 2.5 new connections a second,
//     round robin over the addresses (holding the /24's 16 places for the
//     7 s an open request lasted takes 2.3), each opening a request just
//     within Quiet that it never sends whole, and holding it until the
//     agent closes it (LABPOOL_BENCH_HOG_GAP sets the gap between
//     connections, 400ms by default; 250ms spends the strangers' whole
//     handshake budget).
func BenchmarkDoorHogJoin(b *testing.B) {
	b.Run("every-4s", func(b *testing.B) {
		doorHogJoin(b, func(ctx context.Context, atts []*attacker, target string, requests, dials *atomic.Int64) {
			var wg sync.WaitGroup
			for _, att := range atts {
				wg.Go(func() { hog(ctx, att, target, requests, dials) })
			}
			wg.Wait()
		})
	})
	gap := 400 * time.Millisecond
	if s := os.Getenv("LABPOOL_BENCH_HOG_GAP"); s != "" {
		var err error
		if gap, err = time.ParseDuration(s); err != nil || gap <= 0 {
			b.Fatalf("LABPOOL_BENCH_HOG_GAP=%q: want a duration", s)
		}
	}
	b.Run("open-requests", func(b *testing.B) {
		doorHogJoin(b, func(ctx context.Context, atts []*attacker, target string, requests, dials *atomic.Int64) {
			hogOpenRequests(ctx, atts, target, gap, requests, dials)
		})
	})
}

// doorHogJoin sets up the agent, the stranger's 40 addresses and the
// joiner, runs hogs until the benchmark ends, and times the join.
func doorHogJoin(b *testing.B, hogs func(ctx context.Context, atts []*attacker, target string, requests, dials *atomic.Int64)) {
	l := newLAN(b, "agent", "stranger", "joiner")
	agent, stranger, joiner := l.host("agent"), l.host("stranger"), l.host("joiner")
	agent.agent()
	joiner.agent()
	agent.waitDaemon()
	joiner.waitDaemon()
	joinCode := createPool(b, agent)
	strangerID, err := peer.LoadOrCreate(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	target := agent.ip + ":7420"
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var requests, dials atomic.Int64
	var atts []*attacker
	for _, ip := range fleetAddrs(l, stranger, 40) {
		atts = append(atts, newAttacker(b, stranger.ns, ip, strangerID))
	}
	wg.Go(func() { hogs(ctx, atts, target, &requests, &dials) })
	time.Sleep(12 * time.Second) // the door full, the hogs' idle timers reset many times

	b.ResetTimer()
	for range b.N {
		start := time.Now()
		_, errOut, code := joiner.cli("pool", "join", joinCode, target)
		took := time.Since(start).Seconds()
		ok := 1.0
		if code != 0 {
			b.Logf("joiner: pool join with the door hogged: %s", errOut)
			ok = 0
		}
		b.ReportMetric(took, "join-s")
		b.ReportMetric(ok, "join-ok")
	}
	b.StopTimer()
	b.ReportMetric(float64(dials.Load()), "hog-connections")
	b.ReportMetric(float64(requests.Load()), "hog-requests")
	b.ReportMetric(0, "ns/op")
}

// quietHog is how long an open-requests hog waits after connecting before
// it opens its request: just within the door's Quiet (2 s), so that its
// place, unfinished until the request's deadline (5 s), was held 7 s.
const quietHog = 1900 * time.Millisecond

// hogOpenRequests connects every gap, round robin over atts, and on each
// connection opens a request stream quietHog later, sends the first byte
// of a HEADERS frame and nothing more, holding the connection until
// target closes it or ctx ends.
func hogOpenRequests(ctx context.Context, atts []*attacker, target string, gap time.Duration, requests, dials *atomic.Int64) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(gap)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		att := atts[i%len(atts)]
		wg.Go(func() {
			c, err := att.tryDial(target, time.Second)
			if err != nil {
				return
			}
			dials.Add(1)
			defer c.CloseWithError(0, "")
			sleepCtx(ctx, quietHog) // the latest a request may open and still hold the place longest
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			str, err := c.OpenStreamSync(sctx)
			cancel()
			if err != nil {
				return
			}
			if _, err := str.Write([]byte{0x01}); err != nil { // HEADERS, its length never sent
				return
			}
			requests.Add(1)
			select {
			case <-c.Context().Done():
			case <-ctx.Done():
			}
		})
	}
}

// hog holds a place at target's door: it connects, sends a request every
// 4 s until its connection is closed, and connects again.
func hog(ctx context.Context, att *attacker, target string, requests, dials *atomic.Int64) {
	for ctx.Err() == nil {
		c, err := att.tryDial(target, time.Second)
		if err != nil {
			sleepCtx(ctx, 250*time.Millisecond)
			continue
		}
		dials.Add(1)
		cc := (&http3.Transport{}).NewClientConn(c)
		for ctx.Err() == nil && c.Context().Err() == nil {
			req, _ := http.NewRequestWithContext(c.Context(), http.MethodGet, "https://labpool/v1/node/sample", nil)
			if resp, err := cc.RoundTrip(req); err == nil {
				resp.Body.Close()
				requests.Add(1)
			}
			select {
			case <-time.After(4 * time.Second):
			case <-c.Context().Done():
			case <-ctx.Done():
			}
		}
		c.CloseWithError(0, "")
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// createPool makes h create a pool and returns its join code.
func createPool(b testing.TB, h *host) string {
	b.Helper()
	out, errOut, code := h.cli("pool", "create")
	if code != 0 {
		b.Fatalf("pool create: %s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// fleetAddrs adds n addresses (.100 on) to h's interface and returns them.
func fleetAddrs(l *lan, h *host, n int) []string {
	prefix := h.ip[:len(h.ip)-len(lastOctet(h.ip))]
	var ips []string
	for i := range n {
		ip := fmt.Sprintf("%s%d", prefix, 100+i)
		l.ip("-n", h.ns, "addr", "add", ip+"/24", "dev", "eth0")
		ips = append(ips, ip)
	}
	return ips
}

// floodPerProcess is how many connections one helper process of the
// stranger holds: fewer than its descriptor limit.
const floodPerProcess = 10000

// tcpFloodIn opens n TCP connections to target from namespace ns, round
// robin over ips, sending nothing, in helper processes of the stranger
// (TestFloodHelper, floodPerProcess each) that hold them until the
// returned release is called; it returns how many connected.
func tcpFloodIn(b testing.TB, ns string, ips []string, target string, n int) (made int, release func()) {
	var procs []*exec.Cmd
	var stdins []io.Closer
	madeCh := make(chan int, n/floodPerProcess+1)
	for left := n; left > 0; left -= floodPerProcess {
		cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestFloodHelper$")
		cmd.Env = append(os.Environ(), "LABPOOL_FLOOD_TARGET="+target,
			"LABPOOL_FLOOD_IPS="+strings.Join(ips, ","), fmt.Sprintf("LABPOOL_FLOOD_N=%d", min(left, floodPerProcess)))
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatalf("start a flood helper: %v", err)
		}
		procs, stdins = append(procs, cmd), append(stdins, in)
		go func() { // the helper's count, once its connections are made
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var k int
				if _, err := fmt.Sscanf(sc.Text(), "made %d", &k); err == nil {
					madeCh <- k
				}
			}
		}()
	}
	for range procs {
		select {
		case k := <-madeCh:
			made += k
		case <-time.After(2 * time.Minute):
			b.Fatal("a flood helper made no report in 2 minutes")
		}
	}
	return made, func() {
		for i, p := range procs {
			stdins[i].Close()
			p.Wait()
		}
	}
}

// TestFloodHelper is not a test of its own: BenchmarkPreTLSFlood runs this
// binary in the stranger's namespace to hold its connections (a process of
// its own has descriptors of its own). It opens LABPOOL_FLOOD_N TCP
// connections to LABPOOL_FLOOD_TARGET from the addresses in
// LABPOOL_FLOOD_IPS, sends nothing, prints "made N" and holds them until
// its stdin closes.
func TestFloodHelper(t *testing.T) {
	target := os.Getenv("LABPOOL_FLOOD_TARGET")
	if target == "" {
		t.Skip("a helper process of BenchmarkPreTLSFlood, run by it")
	}
	ips := strings.Split(os.Getenv("LABPOOL_FLOOD_IPS"), ",")
	n, err := strconv.Atoi(os.Getenv("LABPOOL_FLOOD_N"))
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for i := range n {
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ips[i%len(ips)])}}
		if c, err := d.Dial("tcp", target); err == nil {
			conns = append(conns, c)
		}
	}
	fmt.Printf("made %d\n", len(conns))
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}

// fdCount is how many descriptors pid has open.
func fdCount(b testing.TB, pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	return len(ents)
}

// sampleEvery calls f every d until the returned stop is called.
func sampleEvery(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			f()
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
