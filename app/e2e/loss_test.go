//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alerts"
)

// The kernel here has no netem, so packet loss is netfilter's: each host
// drops a share of the UDP datagrams it receives (iptables' statistic
// match, IPv4 and IPv6), which is loss on the path between any two of
// them. Counters beside the drop rule say how much was lost.

// lossy makes h drop pct percent of the UDP datagrams it receives, at
// random.
func (h *host) lossy(t testing.TB, pct float64) {
	t.Helper()
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, rule := range [][]string{
			{"-A", "INPUT", "-p", "udp", "-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(pct/100, 'f', 4, 64), "-j", "DROP"},
			{"-A", "INPUT", "-p", "udp", "-j", "ACCEPT"}, // counts what passed
		} {
			if out, err := exec.Command("ip", append([]string{"netns", "exec", h.ns, ipt}, rule...)...).CombinedOutput(); err != nil {
				t.Fatalf("%s on %s: %v: %s", ipt, h.name, err, out)
			}
		}
	}
}

// udpCounts returns how many UDP datagrams h's lossy rules dropped and let
// through.
func (h *host) udpCounts(t testing.TB) (dropped, passed int64) {
	t.Helper()
	for _, ipt := range []string{"iptables", "ip6tables"} {
		out, err := exec.Command("ip", "netns", "exec", h.ns, ipt, "-L", "INPUT", "-v", "-x", "-n").CombinedOutput()
		if err != nil {
			t.Fatalf("%s -L on %s: %v: %s", ipt, h.name, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				continue
			}
			switch f[2] {
			case "DROP":
				dropped += n
			case "ACCEPT":
				passed += n
			}
		}
	}
	return dropped, passed
}

// lossRun is one run of the pool under loss: what the observers saw.
type lossRun struct {
	offline   int      // sessions with a machine that ended (each one a machine shown offline)
	seen      []string // offline readings of the nodes list, "viewer: node at T"
	alerts    int      // offline alerts raised
	dropped   int64    // datagrams dropped
	delivered int64
}

// underLoss runs three agents in a pool for d with every host dropping pct
// percent of the UDP datagrams it receives, and reports what their
// observers saw: every replication session that ended (the machine it
// followed shown offline), every reading of the nodes list with a machine
// offline, and every offline alert.
func underLoss(t testing.TB, pct float64, d time.Duration) lossRun {
	l := newLAN(t, "m1", "m2", "m3")
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, l.hosts...)
	names := []string{"m1", "m2", "m3"}
	for _, h := range l.hosts {
		waitFor(t, 30*time.Second, h.name+" follows every machine", func() error { return liveNodes(h, names...) })
	}
	ended := make([]int, len(l.hosts)) // "replication session ended" lines before the loss
	for i, h := range l.hosts {
		ended[i] = strings.Count(h.logText(), "replication session ended")
		h.lossy(t, pct)
	}
	start := time.Now()
	var (
		mu   sync.Mutex // guards seen
		seen []string
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for _, h := range l.hosts {
		wg.Add(1)
		go func() { // reads the nodes list as a person's window would, 4 times a second
			defer wg.Done()
			for ctx.Err() == nil {
				rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
				nodes, err := h.client().Nodes(rctx)
				rcancel()
				for _, n := range nodes {
					if err == nil && !n.Online {
						mu.Lock()
						seen = append(seen, fmt.Sprintf("%s: %s at %v", h.name, n.Name, time.Since(start).Round(time.Second)))
						mu.Unlock()
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	var r lossRun
	r.seen = seen
	for i, h := range l.hosts {
		r.offline += strings.Count(h.logText(), "replication session ended") - ended[i]
		dr, pa := h.udpCounts(t)
		r.dropped += dr
		r.delivered += pa
		raised, err := h.client().Alerts(context.Background(), int(d.Seconds())+60)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range raised {
			if a.Rule == alerts.RuleOffline {
				r.alerts++
				t.Logf("%s: alert %s: %s", h.name, a.Rule, a.Message)
			}
		}
	}
	if r.offline > 0 {
		for _, h := range l.hosts {
			for _, line := range strings.Split(h.logText(), "\n") {
				if strings.Contains(line, "replication session ended") {
					t.Logf("%s: %s", h.name, line)
				}
			}
		}
	}
	return r
}

func (r lossRun) rate() float64 { return 100 * float64(r.dropped) / float64(r.dropped+r.delivered) }

// lossFor is how long TestLoss holds the loss: 75 s, or LABPOOL_LOSS (a Go
// duration) when set. BenchmarkLossOffline holds it 10 minutes.
func lossFor(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LABPOOL_LOSS")); err == nil {
		return d
	}
	return def
}

// TestLoss holds 5% packet loss between three machines for 75 s: no
// machine is shown offline, no session between them ends, no offline alert
// is raised.
func TestLoss(t *testing.T) {
	d := lossFor(75 * time.Second)
	r := underLoss(t, 5, d)
	t.Logf("%v at %.2f%% loss (%d of %d UDP datagrams dropped): %d sessions ended, %d offline readings, %d offline alerts",
		d, r.rate(), r.dropped, r.dropped+r.delivered, r.offline, len(r.seen), r.alerts)
	if r.rate() < 3 || r.rate() > 7 {
		t.Errorf("the loss was %.2f%%, want about 5%%", r.rate())
	}
	if r.offline > 0 || len(r.seen) > 0 || r.alerts > 0 {
		t.Errorf("under 5%% loss: %d sessions ended, %d alerts, machines shown offline: %v", r.offline, r.alerts, r.seen)
	}
}

// BenchmarkLossOffline holds 5% packet loss between three machines for
// LABPOOL_LOSS (10 minutes unless set) per iteration and reports the false
// offlines: sessions that ended, readings of a machine offline, and
// offline alerts.
func BenchmarkLossOffline(b *testing.B) {
	if b.N > 1 {
		b.Fatal("one run is the measurement: -benchtime 1x")
	}
	d := lossFor(10 * time.Minute)
	var ended, seen, alerts int
	var rate float64
	for range b.N {
		r := underLoss(b, 5, d)
		ended, seen, alerts = ended+r.offline, seen+len(r.seen), alerts+r.alerts
		rate = r.rate()
		b.Logf("%v at %.2f%% loss: %d sessions ended, %d offline readings %v, %d offline alerts", d, r.rate(), r.offline, len(r.seen), r.seen, r.alerts)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(ended)/float64(b.N), "sessions-ended/op")
	b.ReportMetric(float64(seen)/float64(b.N), "offline-readings/op")
	b.ReportMetric(float64(alerts)/float64(b.N), "offline-alerts/op")
	b.ReportMetric(rate, "loss-%")
}
