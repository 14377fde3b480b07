//go:build linux && cgo

package gputest

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/labpool/labpool/node/gpu"
)

// TopoDevice is a fake GPU whose topology and MIG answers come from
// go-nvml's mock.Device M (NVIDIA's mock library cannot enumerate MIG
// instances), everything else from Device. M's call log counts them.
type TopoDevice struct {
	*Device
	M *mock.Device
}

// GetPciInfo implements gpu's topology reader.
func (d TopoDevice) GetPciInfo() (nvml.PciInfo, nvml.Return) { return d.M.GetPciInfo() }

// GetNvLinkState implements gpu's topology reader.
func (d TopoDevice) GetNvLinkState(l int) (nvml.EnableState, nvml.Return) {
	return d.M.GetNvLinkState(l)
}

// GetNvLinkRemotePciInfo implements gpu's topology reader.
func (d TopoDevice) GetNvLinkRemotePciInfo(l int) (nvml.PciInfo, nvml.Return) {
	return d.M.GetNvLinkRemotePciInfo(l)
}

// GetNvLinkRemoteDeviceType implements gpu's topology reader.
func (d TopoDevice) GetNvLinkRemoteDeviceType(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
	return d.M.GetNvLinkRemoteDeviceType(l)
}

// GetTopologyCommonAncestor implements gpu's topology reader.
func (d TopoDevice) GetTopologyCommonAncestor(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
	return d.M.GetTopologyCommonAncestor(o)
}

// GetMigMode implements gpu's MIG reader.
func (d TopoDevice) GetMigMode() (int, int, nvml.Return) { return d.M.GetMigMode() }

// GetMaxMigDeviceCount implements gpu's MIG reader.
func (d TopoDevice) GetMaxMigDeviceCount() (int, nvml.Return) { return d.M.GetMaxMigDeviceCount() }

// GetMigDeviceHandleByIndex implements gpu's MIG reader.
func (d TopoDevice) GetMigDeviceHandleByIndex(i int) (nvml.Device, nvml.Return) {
	return d.M.GetMigDeviceHandleByIndex(i)
}

// TopoCalls is how many topology and MIG calls M has answered.
func (d TopoDevice) TopoCalls() int {
	m := d.M
	return len(m.GetPciInfoCalls()) + len(m.GetNvLinkStateCalls()) + len(m.GetNvLinkRemotePciInfoCalls()) +
		len(m.GetNvLinkRemoteDeviceTypeCalls()) + len(m.GetTopologyCommonAncestorCalls()) +
		len(m.GetMigModeCalls()) + len(m.GetMaxMigDeviceCountCalls()) + len(m.GetMigDeviceHandleByIndexCalls())
}

// TopoLibrary is a Library handing out TopoDevices: Topo[i] is GPU i.
type TopoLibrary struct {
	*Library
	Topo []TopoDevice
}

// NewTopoLibrary returns n fake GPUs whose topology and MIG the test sets
// on Topo[i].M (a mock.Device answers nothing it was not told: set every
// func the reader calls).
func NewTopoLibrary(n int) TopoLibrary {
	l := TopoLibrary{Library: NewLibrary(n)}
	for _, d := range l.Devices {
		l.Topo = append(l.Topo, TopoDevice{Device: d, M: &mock.Device{}})
	}
	return l
}

// DeviceGetHandleByIndex implements gpu.Library.
func (l TopoLibrary) DeviceGetHandleByIndex(i int) (gpu.Device, nvml.Return) {
	if _, ret := l.Library.DeviceGetHandleByIndex(i); ret != nvml.SUCCESS {
		return nil, ret
	}
	return l.Topo[i], nvml.SUCCESS
}

// MIGDevice is one MIG instance as go-nvml's mock answers it.
func MIGDevice(uuid, name string, gi, ci int, mem uint64) *mock.Device {
	return &mock.Device{
		GetUUIDFunc:              func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		GetNameFunc:              func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return gi, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return ci, nvml.SUCCESS },
		GetMemoryInfoFunc:        func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: mem}, nvml.SUCCESS },
	}
}

// NoTopology makes m answer as a GPU without NVLink, PCIe relations or MIG.
func NoTopology(m *mock.Device) {
	m.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED }
	m.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	m.GetTopologyCommonAncestorFunc = func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	m.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
}

// EnableMIG makes m a GPU in MIG mode with instances, in slots 0, 1, ...
func EnableMIG(m *mock.Device, instances ...*mock.Device) {
	m.GetMigModeFunc = func() (int, int, nvml.Return) {
		return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
	}
	m.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	m.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i < len(instances) {
			return instances[i], nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
}
