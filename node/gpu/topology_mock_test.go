package gpu_test

import (
	"fmt"
	"testing"
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
