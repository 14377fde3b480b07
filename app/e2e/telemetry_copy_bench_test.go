//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
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
// is "unchanged", about 1) and what the copy moved, in MB/s. Each phase
// lasts LABPOOL_BENCH_WINDOW seconds (default 30).
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
		idle := measureTelemetry(b, viewer, telemetry, window, nil)
		var moved atomic.Int64
		busy := measureTelemetry(b, viewer, telemetry, window, func(ctx context.Context) {
			copyUntil(ctx, b, viewer, recv, &moved)
		})
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
		b.ReportMetric(float64(moved.Load())/(1<<20)/window.Seconds(), "copy-MB/s")
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
}

// telemetryP99 is what measureTelemetry saw: the p99s of the samples'
// delivery and of the telemetry requests, and how many samples arrived.
type telemetryP99 struct {
	delivery, request time.Duration
	samples           int
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
	var last time.Time
	for ctx.Err() == nil {
		n, err := nodeByName(viewer, "agent")
		if now := time.Now(); err == nil && n.LastSeen.After(last) {
			if !last.IsZero() { // the first is as old as it was when we began
				delivery = append(delivery, now.Sub(n.LastSeen))
			}
			last = n.LastSeen
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	if len(delivery) < 5 || len(requests) < 5 {
		b.Fatalf("too few measures: %d samples, %d requests", len(delivery), len(requests))
	}
	return telemetryP99{delivery: percentile(delivery, 99), request: percentile(requests, 99), samples: len(delivery)}
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
		os.Remove(filepath.Join(recv, name))
	}
}
