//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestMIGProfileOnMock: NVIDIA's mock NVML (A100 profile) reports MIG
// supported but off, and can create no instance, so no MIG instance can be
// placed by profile here: `run --mig 1g.10gb` from a laptop is refused,
// naming the rule and saying the machine has no instance of that profile,
// with --node or without (the plan's reason for gpu1). Placing an instance is
// proved by the ledger's and the planner's tests over fakes (node/jobs,
// app), not here.
func TestMIGProfileOnMock(t *testing.T) {
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	gpu1.useMockNVML("a100.yaml")
	gpu1.docker()
	gpu1.agent()
	laptop.agent()
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, laptop)
	waitFor(t, 20*time.Second, "the agent live on the laptop", func() error { return liveNodes(laptop, "gpu1") })
	n, err := nodeByName(laptop, "gpu1")
	if err != nil {
		t.Fatal(err)
	}
	waitUnits(t, laptop, "gpu1", len(n.GPUs))
	for _, g := range n.GPUs {
		if g.MIG == nil || !g.MIG.Supported || g.MIG.Enabled {
			t.Fatalf("GPU %d MIG %+v; the profile states supported, off", g.Index, g.MIG)
		}
	}
	const img = "labpool-test/busybox:1"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--mig", "1g.10gb", "--node", "gpu1"}, `refused by rule "mig profile": 1 MIG instances of profile 1g.10gb asked: this machine has 0`},
		{[]string{"--mig", "1g.10gb"}, `gpu1: refused by rule "mig profile"`},
		{[]string{"--mig", "3g.40gb", "--gpus", "2", "--node", "gpu1"}, `2 MIG instances of profile 3g.40gb asked: this machine has 0`},
	} {
		out, errOut, code := laptop.cli(append(append([]string{"run"}, tt.args...), img, "true")...)
		t.Logf("run %v: exit %d: %s%s", tt.args, code, out, errOut)
		if code == 0 || !strings.Contains(out+errOut, tt.want) {
			t.Errorf("run %v: exit %d: %s%s; want refused, naming %s", tt.args, code, out, errOut, tt.want)
		}
	}
}
