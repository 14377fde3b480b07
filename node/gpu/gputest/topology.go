//go:build linux && cgo

package gputest

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// A fake Device has no NVLink, no PCIe topology and no MIG: it answers
// NOT_SUPPORTED, as an old GPU does. A test that needs them wraps a Device
// and answers these itself (for example from go-nvml's mock.Device).

// GetPciInfo implements gpu's topology reader.
func (d *Device) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED
}

// GetNvLinkState implements gpu's topology reader.
func (d *Device) GetNvLinkState(int) (nvml.EnableState, nvml.Return) {
	return 0, nvml.ERROR_NOT_SUPPORTED
}

// GetNvLinkRemotePciInfo implements gpu's topology reader.
func (d *Device) GetNvLinkRemotePciInfo(int) (nvml.PciInfo, nvml.Return) {
	return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED
}

// GetNvLinkRemoteDeviceType implements gpu's topology reader.
func (d *Device) GetNvLinkRemoteDeviceType(int) (nvml.IntNvLinkDeviceType, nvml.Return) {
	return nvml.NVLINK_DEVICE_TYPE_UNKNOWN, nvml.ERROR_NOT_SUPPORTED
}

// GetTopologyCommonAncestor implements gpu's topology reader.
func (d *Device) GetTopologyCommonAncestor(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
	return 0, nvml.ERROR_NOT_SUPPORTED
}

// GetMigMode implements gpu's MIG reader.
func (d *Device) GetMigMode() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }

// GetMaxMigDeviceCount implements gpu's MIG reader.
func (d *Device) GetMaxMigDeviceCount() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }

// GetMigDeviceHandleByIndex implements gpu's MIG reader.
func (d *Device) GetMigDeviceHandleByIndex(int) (nvml.Device, nvml.Return) {
	return nil, nvml.ERROR_NOT_SUPPORTED
}
