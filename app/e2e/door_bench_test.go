package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

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
// memory every 100 ms and a member's telemetry request every 100 ms
// meanwhile, then waits (60 s at most) for the memory to come back.
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
			lat = append(lat, telemetryDelay(ctx, member))
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
	c.p99ms = ms(percentile(lat, 99))
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
