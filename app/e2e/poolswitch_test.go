//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPoolSwitchForgets: a laptop removed from gpu1's pool, that joins c's
// pool, shows nothing of gpu1 any more: not its alert, not its GPUs in the
// usage report (they used to stay, read from the replica by origin), while
// its own history stays.
func TestPoolSwitchForgets(t *testing.T) {
	l := newLAN(t, "gpu1", "laptop", "c")
	gpu1, laptop, c := l.host("gpu1"), l.host("laptop"), l.host("c")
	gpu1.env = append(gpu1.env, "LABPOOL_SIMULATE_GPUS=2")
	for _, h := range l.hosts {
		h.agent()
	}
	ids := map[*host]string{}
	for _, h := range l.hosts {
		h.waitDaemon()
		ps, err := h.client().Pool(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ids[h] = ps.SelfID
	}
	joinAll(t, gpu1, laptop)
	waitFor(t, 20*time.Second, "gpu1 live on the laptop", func() error { return liveNodes(laptop, "gpu1") })
	mustCLI(t, gpu1, "alerts", "set", "gpu-temp", "--threshold", "10", "--for", "1s") // simulated GPUs run at 35-75 °C
	gpu1Seen := func() (string, bool) {
		alerts, _, _ := laptop.cli("alerts", "--json")
		report, _, _ := laptop.cli("report", "--json")
		if strings.Contains(alerts, ids[gpu1]) {
			return "alerts", true
		}
		if strings.Contains(report, ids[gpu1]) || strings.Contains(report, `"gpu1"`) {
			return "report", true
		}
		return "", false
	}
	waitFor(t, 30*time.Second, "gpu1's alert on the laptop", func() error {
		if out, _, _ := laptop.cli("alerts", "--json"); !strings.Contains(out, ids[gpu1]) {
			return fmt.Errorf("alerts: %s", out)
		}
		return nil
	})
	if _, ok := gpu1Seen(); !ok {
		t.Fatal("the laptop shows nothing of gpu1 while in its pool")
	}

	mustCLI(t, gpu1, "pool", "remove", ids[laptop])
	waitFor(t, 20*time.Second, "the laptop told it was removed", func() error {
		if out, _, _ := laptop.cli("pool", "members"); !strings.Contains(out, "removed from the pool by gpu1") {
			return fmt.Errorf("pool members: %s", out)
		}
		return nil
	})
	mustCLI(t, laptop, "pool", "join", lastLine(mustCLI(t, c, "pool", "create")), c.ip+":7420")
	waitFor(t, 20*time.Second, "c live on the laptop", func() error { return liveNodes(laptop, "c") })
	if where, ok := gpu1Seen(); ok {
		t.Errorf("in c's pool, the laptop still shows gpu1 in its %s", where)
	}
	if out := mustCLI(t, laptop, "history", "laptop", "--json"); !strings.Contains(out, "cpu") {
		t.Errorf("the laptop's own history is gone: %.300s", out)
	}
}
