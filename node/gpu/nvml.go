//go:build linux && cgo

package gpu

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// Library is the part of NVML's library interface a Sampler calls.
// nvml.Interface satisfies it through newLibrary; gputest has a fake.
type Library interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (Device, nvml.Return)
	// EventSetCreate makes the set XID events arrive in; a library without
	// events returns ERROR_NOT_SUPPORTED.
	EventSetCreate() (nvml.EventSet, nvml.Return)
}

// Device is the subset of nvml.Device a Sampler reads.
type Device interface {
	GetUUID() (string, nvml.Return)
	GetName() (string, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	// GetMemoryInfo_v2 keeps the driver's reserved memory apart from used,
	// as nvidia-smi does.
	GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return)
	GetEnforcedPowerLimit() (uint32, nvml.Return)
	GetUtilizationRates() (nvml.Utilization, nvml.Return)
	GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return)
	GetPowerUsage() (uint32, nvml.Return)
	GetClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetFanSpeed() (uint32, nvml.Return)
	GetPerformanceState() (nvml.Pstates, nvml.Return)
	GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return)
	GetGraphicsRunningProcesses() ([]nvml.ProcessInfo, nvml.Return)
	// Health.
	GetCurrentClocksThrottleReasons() (uint64, nvml.Return)
	GetTotalEnergyConsumption() (uint64, nvml.Return) // mJ
	GetTotalEccErrors(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return)
	GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return)
	GetRemappedRows() (corrRows int, uncRows int, pending bool, failed bool, ret nvml.Return)
	GetSupportedEventTypes() (uint64, nvml.Return)
	RegisterEvents(uint64, nvml.EventSet) nvml.Return
}

var _ Device = nvml.Device(nil)

// nvmlLibrary adapts go-nvml's library to Library.
type nvmlLibrary struct{ lib nvml.Interface }

func newLibrary(path string) Library {
	var opts []nvml.LibraryOption
	if path != "" {
		opts = append(opts, nvml.WithLibraryPath(path))
	}
	return nvmlLibrary{nvml.New(opts...)}
}

func (l nvmlLibrary) Init() nvml.Return                  { return l.lib.Init() }
func (l nvmlLibrary) Shutdown() nvml.Return              { return l.lib.Shutdown() }
func (l nvmlLibrary) DeviceGetCount() (int, nvml.Return) { return l.lib.DeviceGetCount() }

func (l nvmlLibrary) EventSetCreate() (nvml.EventSet, nvml.Return) { return l.lib.EventSetCreate() }

func (l nvmlLibrary) DeviceGetHandleByIndex(i int) (Device, nvml.Return) {
	d, ret := l.lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	// A driver before R510 lacks the v2 memory info; go-nvml would call
	// the missing symbol.
	if l.lib.Extensions().LookupSymbol("nvmlDeviceGetMemoryInfo_v2") != nil {
		return noMemoryV2{d}, ret
	}
	return d, ret
}

// noMemoryV2 is a device of a library without nvmlDeviceGetMemoryInfo_v2.
type noMemoryV2 struct{ nvml.Device }

func (noMemoryV2) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	return nvml.Memory_v2{}, nvml.ERROR_FUNCTION_NOT_FOUND
}
