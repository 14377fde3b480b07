//go:build linux && cgo

package gpu_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

func pciInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	copy(p.BusId[:], bus)
	return p
}

// newTopoMachine is four GPUs: 0 and 1 joined by 4 NVLinks under one PCIe
// switch, 2 and 3 by 2 NVLinks under several switches, the pairs across
// NUMA nodes. GPU 3 has MIG on with two instances (slot 1 empty), GPU 2
// MIG off with on pending, GPUs 0 and 1 no MIG.
func newTopoMachine() gputest.TopoLibrary {
	lib := gputest.NewTopoLibrary(4)
	bus := []string{"00000000:1A:00.0", "00000000:1B:00.0", "00000000:8A:00.0", "00000000:8B:00.0"}
	peer := map[int]int{0: 1, 1: 0, 2: 3, 3: 2}
	nlinks := map[int]int{0: 4, 1: 4, 2: 2, 3: 2}
	for i := range 4 {
		*lib.Topo[i].M = mock.Device{
			GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return pciInfo(bus[i]), nvml.SUCCESS },
			GetNvLinkStateFunc: func(l int) (nvml.EnableState, nvml.Return) {
				if l >= nvml.NVLINK_MAX_LINKS {
					return 0, nvml.ERROR_INVALID_ARGUMENT
				}
				if l < nlinks[i] {
					return nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			},
			GetNvLinkRemoteDeviceTypeFunc: func(int) (nvml.IntNvLinkDeviceType, nvml.Return) {
				return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
			},
			GetNvLinkRemotePciInfoFunc: func(int) (nvml.PciInfo, nvml.Return) {
				return pciInfo(bus[peer[i]]), nvml.SUCCESS
			},
			GetTopologyCommonAncestorFunc: func(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
				k := index(o.(gputest.TopoDevice))
				switch {
				case i/2 != k/2:
					return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
				case i < 2:
					return nvml.TOPOLOGY_SINGLE, nvml.SUCCESS
				}
				return nvml.TOPOLOGY_MULTIPLE, nvml.SUCCESS
			},
			GetMigModeFunc: func() (int, int, nvml.Return) {
				switch i {
				case 2:
					return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
				case 3:
					return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
				}
				return 0, 0, nvml.ERROR_NOT_SUPPORTED
			},
			GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 7, nvml.SUCCESS },
			GetMigDeviceHandleByIndexFunc: func(k int) (nvml.Device, nvml.Return) {
				switch k {
				case 0:
					return gputest.MIGDevice("MIG-aaaa", "NVIDIA A100-SXM4-40GB MIG 3g.20gb", 1, 0, 20<<30), nvml.SUCCESS
				case 2:
					return gputest.MIGDevice("MIG-bbbb", "NVIDIA A100-SXM4-40GB MIG 1g.5gb", 5, 0, 5<<30), nvml.SUCCESS
				}
				return nil, nvml.ERROR_NOT_FOUND
			},
		}
	}
	return lib
}

// index is the fake's NVML index (read from its UUID).
func index(d gputest.TopoDevice) int {
	var i int
	uuid, _ := d.GetUUID()
	fmt.Sscanf(uuid[len(uuid)-1:], "%d", &i)
	return i
}

func TestTopologyAndMIG(t *testing.T) {
	lib := newTopoMachine()
	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	devs := s.Devices()
	uuid := func(i int) string { return devs[i].UUID }
	wantLinks := [][]gpu.Link{
		{{Peer: 1, PeerUUID: uuid(1), NVLinks: 4, PCIe: "PIX"}, {Peer: 2, PeerUUID: uuid(2), PCIe: "SYS"}, {Peer: 3, PeerUUID: uuid(3), PCIe: "SYS"}},
		{{Peer: 0, PeerUUID: uuid(0), NVLinks: 4, PCIe: "PIX"}, {Peer: 2, PeerUUID: uuid(2), PCIe: "SYS"}, {Peer: 3, PeerUUID: uuid(3), PCIe: "SYS"}},
		{{Peer: 0, PeerUUID: uuid(0), PCIe: "SYS"}, {Peer: 1, PeerUUID: uuid(1), PCIe: "SYS"}, {Peer: 3, PeerUUID: uuid(3), NVLinks: 2, PCIe: "PXB"}},
		{{Peer: 0, PeerUUID: uuid(0), PCIe: "SYS"}, {Peer: 1, PeerUUID: uuid(1), PCIe: "SYS"}, {Peer: 2, PeerUUID: uuid(2), NVLinks: 2, PCIe: "PXB"}},
	}
	wantMIG := []*gpu.MIG{nil, nil,
		{Supported: true, Pending: true, Instances: []gpu.MIGInstance{}},
		{Supported: true, Enabled: true, Instances: []gpu.MIGInstance{
			{UUID: "MIG-aaaa", Name: "NVIDIA A100-SXM4-40GB MIG 3g.20gb", GPUInstance: 1, MemTotalBytes: 20 << 30},
			{UUID: "MIG-bbbb", Name: "NVIDIA A100-SXM4-40GB MIG 1g.5gb", GPUInstance: 5, MemTotalBytes: 5 << 30},
		}},
	}
	for i, d := range devs {
		if !reflect.DeepEqual(d.Links, wantLinks[i]) {
			t.Errorf("gpu %d links = %+v; want %+v", i, d.Links, wantLinks[i])
		}
		if !reflect.DeepEqual(d.MIG, wantMIG[i]) {
			t.Errorf("gpu %d MIG = %+v; want %+v", i, d.MIG, wantMIG[i])
		}
	}
	if devs[2].PCIBusID != "00000000:8A:00.0" {
		t.Errorf("gpu 2 PCI bus ID = %q", devs[2].PCIBusID)
	}
}

// TestSampleReadsNoTopology counts the topology and MIG calls: all are made
// in Open, none in a Sample.
func TestSampleReadsNoTopology(t *testing.T) {
	lib := newTopoMachine()
	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opened := make([]int, len(lib.Topo))
	for i, d := range lib.Topo {
		if opened[i] = d.TopoCalls(); opened[i] == 0 {
			t.Fatalf("gpu %d: Open made no topology call", i)
		}
	}
	for range 5 {
		if _, err := s.Sample(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range lib.Topo {
		if n := d.TopoCalls(); n != opened[i] {
			t.Errorf("gpu %d: %d topology and MIG calls after 5 samples; Open made %d, a Sample must make none", i, n, opened[i])
		}
	}
	t.Logf("topology and MIG calls at Open, per GPU: %v; per Sample: 0", opened)
}

// TestNVSwitchTopology: GPUs whose links all reach NVSwitches are NVLinked
// to each other by the fewer of their switch links (nvidia-smi's NV#).
func TestNVSwitchTopology(t *testing.T) {
	lib := gputest.NewTopoLibrary(2)
	for i, n := range []int{18, 12} {
		*lib.Topo[i].M = mock.Device{
			GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
				return pciInfo(fmt.Sprintf("00000000:%d0:00.0", i+1)), nvml.SUCCESS
			},
			GetNvLinkStateFunc: func(l int) (nvml.EnableState, nvml.Return) {
				if l < n {
					return nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
				return 0, nvml.ERROR_INVALID_ARGUMENT
			},
			GetNvLinkRemoteDeviceTypeFunc: func(int) (nvml.IntNvLinkDeviceType, nvml.Return) {
				return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
			},
			GetTopologyCommonAncestorFunc: func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
				return nvml.TOPOLOGY_NODE, nvml.SUCCESS
			},
			GetMigModeFunc: func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED },
		}
	}
	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, d := range s.Devices() {
		if len(d.Links) != 1 || d.Links[0].NVLinks != 12 || d.Links[0].PCIe != "NODE" {
			t.Errorf("gpu %d links = %+v; want one link of 12 NVLinks over NODE", i, d.Links)
		}
	}
}
