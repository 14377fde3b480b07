//go:build linux && cgo

package gpu_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// TestMockTopology reads topology and MIG from NVIDIA's mock library: the
// H100 profile's eight GPUs are all NVLinked through four NVSwitches with
// 18 links each (nvidia-smi's NV18), four per NUMA node (PIX within, SYS
// across), MIG supported and off with no instances.
func TestMockTopology(t *testing.T) {
	if !inMock(t, "h100.yaml", "") {
		return
	}
	devs := openMock(t).Devices()
	for i, d := range devs {
		if want := fmt.Sprintf("00000000:%s:00.0", []string{"1A", "1B", "4A", "4B", "8A", "8B", "CA", "CB"}[i]); d.PCIBusID != want {
			t.Errorf("gpu %d PCI bus ID %q; the profile states %q", i, d.PCIBusID, want)
		}
		if len(d.Links) != 7 {
			t.Fatalf("gpu %d: %d links; want 7", i, len(d.Links))
		}
		for _, l := range d.Links {
			pcie := "SYS"
			if l.Peer/4 == i/4 {
				pcie = "PIX"
			}
			if l.NVLinks != 18 || l.PCIe != pcie || l.PeerUUID != devs[l.Peer].UUID {
				t.Errorf("gpu %d -> %d: %+v; want 18 NVLinks over %s", i, l.Peer, l, pcie)
			}
		}
		if d.MIG == nil || !d.MIG.Supported || d.MIG.Enabled || d.MIG.Pending || len(d.MIG.Instances) != 0 {
			t.Errorf("gpu %d MIG %+v; the profile states supported, disabled, none pending", i, d.MIG)
		}
	}
}

// TestMockTopologyT4: the T4 profile has no NVLink and no MIG.
func TestMockTopologyT4(t *testing.T) {
	if !inMock(t, "t4.yaml", "") {
		return
	}
	devs := openMock(t).Devices()
	for i, d := range devs {
		if d.MIG != nil {
			t.Errorf("gpu %d MIG %+v; a T4 has none", i, d.MIG)
		}
		for _, l := range d.Links {
			if l.NVLinks != 0 || l.PCIe == "" {
				t.Errorf("gpu %d -> %d: %+v; want PCIe only", i, l.Peer, l)
			}
		}
	}
}

// TestMockTopologyReadOnce counts, in NVIDIA's mock library's own call log
// (MOCK_NVML_DEBUG), the topology and MIG calls of Open and of 10 Samples
// on the H100 profile: all in Open, none in a Sample.
func TestMockTopologyReadOnce(t *testing.T) {
	if os.Getenv(mockChild) == t.Name() {
		fmt.Fprintln(os.Stderr, "=== OPEN")
		s := openMock(t)
		fmt.Fprintln(os.Stderr, "=== SAMPLES")
		for range 10 {
			if _, err := s.Sample(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintln(os.Stderr, "=== END")
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		gpu.SetClock(s, func() time.Time { return now })
		for range 5 * 60 { // five minutes, a Sample a second
			if _, err := s.Sample(t.Context()); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Second)
		}
		fmt.Fprintln(os.Stderr, "=== MINUTES")
		return
	}
	m, err := gputest.FindMock()
	if err != nil {
		t.Skip(err.Error())
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), mockChild+"="+t.Name(), "LABPOOL_GPU_MOCK_LIB="+m.Lib,
		"MOCK_NVML_CONFIG="+m.Profile("h100.yaml"), "MOCK_NVML_DEBUG=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test on the mock library failed: %v\n%s", err, out)
	}
	text := string(out)
	open, rest, ok1 := strings.Cut(text, "=== SAMPLES")
	samples, rest, ok2 := strings.Cut(rest, "=== END")
	minutes, _, _ := strings.Cut(rest, "=== MINUTES")
	if !ok1 || !ok2 {
		t.Fatalf("no markers in the child's output:\n%s", out)
	}
	topo := func(s string) (n int) {
		for _, l := range strings.Split(s, "\n") {
			for _, call := range []string{"nvmlDeviceGetNvLink", "nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetMig",
				"nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetPciInfo"} {
				if strings.HasPrefix(l, "[NVML] "+call) {
					n++
				}
			}
		}
		return n
	}
	calls := func(s string) int { return strings.Count(s, "\n[NVML] nvml") }
	if topo(open) == 0 {
		t.Fatalf("Open made no topology call in the mock's log:\n%s", open)
	}
	if n := topo(samples); n != 0 {
		t.Errorf("10 Samples made %d topology or MIG calls; want none", n)
	}
	t.Logf("8 GPUs: Open made %d topology and MIG calls (of %d NVML calls); 10 Samples made %d of %d",
		topo(open), calls(open), topo(samples), calls(samples))
	// Over five minutes, each GPU's MIG mode is checked once a minute (its
	// mode and room for instances: 2 calls), and nothing else of the
	// topology is read again, since nothing changed.
	mig := strings.Count(minutes, "[NVML] nvmlDeviceGetMigMode") + strings.Count(minutes, "[NVML] nvmlDeviceGetMaxMigDeviceCount")
	if n := topo(minutes) - mig; n != 0 || mig > 5*8*2 {
		t.Errorf("five minutes of Samples made %d MIG calls (want at most %d) and %d other topology calls (want none)", mig, 5*8*2, n)
	}
	t.Logf("five minutes of Samples: %d MIG calls for 8 GPUs, of %d NVML calls", mig, calls(minutes))
}

// TestMockMIGAndLostReadAgain: on NVIDIA's mock library (H100 profile), an
// owner's MIG change (mode pending on GPU 3, set by override while the
// Sampler runs) is read within a minute, not before; a GPU that falls off
// the bus makes the topology read again at once: no other GPU lists a
// link to it.
func TestMockMIGAndLostReadAgain(t *testing.T) {
	if !inMock(t, "h100.yaml", "") {
		return
	}
	s := openMock(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gpu.SetClock(s, func() time.Time { return now })
	sample := func() []gpu.Stats {
		t.Helper()
		got, err := s.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
		return got
	}
	sample()
	gen := s.DevicesGeneration()
	setOverrides(t, `devices:
  "3":
    mig: {mode_pending: enabled}
`)
	for range 59 {
		sample()
	}
	if m := s.Devices()[3].MIG; m == nil || m.Pending {
		t.Fatalf("GPU 3 MIG %+v before a minute passed; want it not read again yet", m)
	}
	sample()
	if m := s.Devices()[3].MIG; m == nil || !m.Pending || m.Enabled || s.DevicesGeneration() != gen+1 {
		t.Fatalf("GPU 3 MIG %+v, generation %d -> %d after a minute; want the pending mode read, one change", m, gen, s.DevicesGeneration())
	}
	setOverrides(t, `devices:
  "3":
    mig: {mode_pending: enabled}
  "5":
    failure: {mode: fallen_off_bus}
`)
	got := sample()
	if got[5].Health != gpu.HealthLost || s.DevicesGeneration() != gen+2 {
		t.Fatalf("GPU 5 %s, generation %d; want lost, the topology read again", got[5].Health, s.DevicesGeneration())
	}
	for _, d := range s.Devices() {
		for _, l := range d.Links {
			if l.Peer == 5 {
				t.Errorf("GPU %d still lists a link to the lost GPU 5: %+v", d.Index, l)
			}
		}
	}
}
