//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestShareTimeSliced: on a machine with simulated GPUs (no MPS), `run
// --gpu-share 0.25 --gpu-mem 8GiB` from a laptop starts the job on one GPU
// and says plainly that its share is time-sliced and uncapped, as ps
// does; a share over 1 and a memory cap over the GPUs' are refused, naming
// the rule and the GPU's memory.
func TestShareTimeSliced(t *testing.T) {
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	gpu1.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	gpu1.docker()
	gpu1.agent()
	laptop.start("web", "--listen", "127.0.0.1:7421", "--name", "laptop", "--iface", "eth0", "--peer-listen", ":7420")
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, laptop)
	waitFor(t, 20*time.Second, "the agent live on the laptop", func() error { return liveNodes(laptop, "gpu1") })
	const img = "labpool-test/busybox:1"

	out, errOut, code := laptop.cli("run", "--gpu-share", "0.25", "--gpu-mem", "8GiB", "--name", "nb", img, "sleep", "60")
	if code != 0 {
		t.Fatalf("run --gpu-share: exit %d: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "share: a 25% time-sliced share, uncapped") || !strings.Contains(out, "GPUs [") {
		t.Errorf("run said:\n%s\nwant it on one GPU, time-sliced and uncapped", out)
	}
	t.Logf("run said:\n%s", out)
	ps, _, _ := laptop.cli("ps")
	t.Logf("ps:\n%s", ps)
	if !strings.Contains(ps, "25% uncapped") {
		t.Errorf("ps:\n%s\nwant the share said uncapped", ps)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu-share", "1.5"}, `"gpu-share"`},
		{[]string{"--gpu-share", "0.5", "--gpu-mem", "100GiB", "--node", "gpu1"}, "has 80 GiB"},
		{[]string{"--gpu-share", "0.5", "-e", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100", "--node", "gpu1"}, `"no-mps-env"`},
	} {
		out, errOut, code := laptop.cli(append(append([]string{"run"}, tt.args...), img, "true")...)
		t.Logf("run %v: %s%s", tt.args, out, errOut)
		if code == 0 || !strings.Contains(out+errOut, tt.want) {
			t.Errorf("run %v: exit %d: %s%s; want refused, naming %s", tt.args, code, out, errOut, tt.want)
		}
	}
}
