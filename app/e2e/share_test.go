//go:build linux

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
)

// TestShareTimeSliced: on a machine with simulated GPUs (no MPS), `run
// --gpu-share 0.25 --gpu-mem 8GiB` from a laptop starts the job on one GPU
// and says plainly that its share is time-sliced and uncapped, as ps
// does; a share over 1 and a memory cap over the GPUs' are refused, naming
// the rule and the GPU's memory. Then shares are placed as the ledger
// grants them: two halves share one GPU, a third half takes the other, a
// 0.75 beside a half fits neither, and gpu1's grants record and `labpool
// gpus` name both holders of the shared GPU (sharesPlaced).
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
	waitUnits(t, laptop, "gpu1", 2)
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
	mustCLI(t, laptop, "rm", "-f", lastLine(out))
	sharesPlaced(t, laptop, gpu1)
}

// sharesPlaced: from laptop, on gpu1's two free GPUs, two 0.5 shares land
// on one GPU, a third on the other, and a 0.75 fits neither (refused with
// each GPU's free part); ps says each share time-sliced and uncapped, and
// gpu1's grants record and `labpool gpus` name both holders of the shared
// GPU.
func sharesPlaced(t *testing.T, laptop, gpu1 *host) {
	const img = "labpool-test/busybox:1"
	var ids []string
	for _, name := range []string{"half-a", "half-b", "half-c"} {
		out := mustCLI(t, laptop, "run", "--gpu-share", "0.5", "--node", "gpu1", "--name", name, img, "sleep", "600")
		ids = append(ids, lastLine(out))
	}
	var js []app.Job
	for _, id := range ids {
		js = append(js, waitJob(t, laptop, id, func(j app.Job) bool { return j.State == "running" }))
	}
	for i, j := range js {
		if len(j.GPUs) != 1 || j.GPUShare != 0.5 {
			t.Fatalf("%s holds %v, share %v; want one GPU, a half", j.Name, j.GPUs, j.GPUShare)
		}
		t.Logf("%s (%s): GPU %v, share %v", j.Name, ids[i], j.GPUIndexes, j.GPUShare)
	}
	if js[0].GPUs[0] != js[1].GPUs[0] || js[2].GPUs[0] == js[0].GPUs[0] {
		t.Errorf("halves on GPUs %v, %v, %v; want the first two on one GPU, the third on the other",
			js[0].GPUIndexes, js[1].GPUIndexes, js[2].GPUIndexes)
	}
	out, errOut, code := laptop.cli("run", "--gpu-share", "0.75", "--node", "gpu1", img, "true")
	t.Logf("run --gpu-share 0.75: exit %d: %s%s", code, out, errOut)
	if code == 0 || !strings.Contains(out+errOut, "less than the share asked") {
		t.Errorf("run --gpu-share 0.75 beside the halves: exit %d: %s%s; want refused, each GPU's free part too small", code, out, errOut)
	}
	ps := mustCLI(t, laptop, "ps")
	t.Logf("ps:\n%s", ps)
	if n := strings.Count(ps, "50% uncapped"); n != 3 {
		t.Errorf("ps says \"50%% uncapped\" %d times; want once per half:\n%s", n, ps)
	}
	// gpu1's grants record, which gpus reads too, names both holders of the
	// shared GPU and the third's of the other.
	waitFor(t, 20*time.Second, "gpu1's grants record with every holder", func() error {
		n, err := nodeByName(laptop, "gpu1")
		if err != nil {
			return err
		}
		for _, u := range []string{js[0].GPUs[0], js[2].GPUs[0]} {
			holders := map[string]float64{}
			for _, g := range n.Alloc.Grants {
				if slices.Contains(g.Units, u) {
					holders[g.Holder.ID] = g.Share
				}
			}
			want := map[string]float64{ids[2]: 0.5}
			if u == js[0].GPUs[0] {
				want = map[string]float64{ids[0]: 0.5, ids[1]: 0.5}
			}
			if !maps.Equal(holders, want) {
				return fmt.Errorf("grants of %s: %v; want %v", u, holders, want)
			}
		}
		return nil
	})
	gpus := mustCLI(t, laptop, "gpus")
	t.Logf("gpus:\n%s", gpus)
	for _, want := range []string{"half-a 50%, half-b 50%", "half-c 50%"} {
		if !strings.Contains(gpus, want) {
			t.Errorf("labpool gpus does not say %q:\n%s", want, gpus)
		}
	}
}

// waitUnits waits until h reads node's grants record with n units: the
// ledger's view a plan decides on (before it, the plan sees no GPU there).
func waitUnits(t *testing.T, h *host, node string, n int) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("%s's grants record with %d units on %s", node, n, h.name), func() error {
		nd, err := nodeByName(h, node)
		if err != nil {
			return err
		}
		if nd.Alloc == nil || len(nd.Alloc.Units) != n {
			return fmt.Errorf("%s's allocation as %s reads it: %+v", node, h.name, nd.Alloc)
		}
		return nil
	})
}
