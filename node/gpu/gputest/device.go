//go:build linux && cgo

package gputest

import (
	"slices"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/labpool/labpool/node/gpu"
)

// Device is a fake GPU: each method returns its field, or the Return set
// in Fail under the method's name.
type Device struct {
	// nvml.Device is nil: it makes a *Device an nvml.Device, which an
	// event names; the methods a Sampler does not call panic.
	nvml.Device
	Mu           sync.Mutex // guards the fields below while a Sampler reads them
	UUID, Name   string
	Memory       nvml.Memory // v1: as a real driver's, Used counts MemReserved; v2 keeps it apart
	MemReserved  uint64
	Util         nvml.Utilization
	TempC        uint32
	PowerMW      uint32
	PowerLimitMW uint32
	SMClockMHz   uint32
	MemClockMHz  uint32
	Fan          uint32 // percent
	PState       nvml.Pstates
	Compute      []nvml.ProcessInfo
	Graphics     []nvml.ProcessInfo
	// Health readings.
	Throttle        uint64 // nvml.ClocksThrottleReason* bits
	EnergyMJ        uint64
	ECCUncorrected  uint64 // volatile
	ECCCorrected    uint64 // volatile
	RetiredPending  bool
	RemapPending    bool
	RemapFailed     bool
	SupportedEvents uint64                 // nvml.EventType* bits; NewDevice sets XID
	Registered      uint64                 // events registered by RegisterEvents
	Fail            map[string]nvml.Return // method name -> error it returns
	// Hang, when not nil, makes every call wait until it is closed.
	Hang chan struct{}
	// calls counts the calls made, by method name.
	calls map[string]int
}

// Calls returns how many times method was called.
func (d *Device) Calls(method string) int {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	return d.calls[method]
}

var _ gpu.Device = (*Device)(nil)

// ret waits out Hang, locks d and returns the failure set for method.
// The caller unlocks d.
func (d *Device) ret(method string) nvml.Return {
	if d.Hang != nil {
		<-d.Hang
	}
	d.Mu.Lock()
	if d.calls == nil {
		d.calls = map[string]int{}
	}
	d.calls[method]++
	if r, ok := d.Fail[method]; ok {
		return r
	}
	return nvml.SUCCESS
}

// GetUUID implements gpu.Device.
func (d *Device) GetUUID() (string, nvml.Return) {
	r := d.ret("GetUUID")
	defer d.Mu.Unlock()
	return d.UUID, r
}

// GetName implements gpu.Device.
func (d *Device) GetName() (string, nvml.Return) {
	r := d.ret("GetName")
	defer d.Mu.Unlock()
	return d.Name, r
}

// GetMemoryInfo implements gpu.Device.
func (d *Device) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	r := d.ret("GetMemoryInfo")
	defer d.Mu.Unlock()
	return d.Memory, r
}

// GetMemoryInfo_v2 implements gpu.Device: Memory with MemReserved apart
// from used.
func (d *Device) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	r := d.ret("GetMemoryInfo_v2")
	defer d.Mu.Unlock()
	m := d.Memory
	return nvml.Memory_v2{Total: m.Total, Reserved: d.MemReserved, Free: m.Free, Used: m.Used - min(m.Used, d.MemReserved)}, r
}

// GetEnforcedPowerLimit implements gpu.Device.
func (d *Device) GetEnforcedPowerLimit() (uint32, nvml.Return) {
	r := d.ret("GetEnforcedPowerLimit")
	defer d.Mu.Unlock()
	return d.PowerLimitMW, r
}

// GetUtilizationRates implements gpu.Device.
func (d *Device) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	r := d.ret("GetUtilizationRates")
	defer d.Mu.Unlock()
	return d.Util, r
}

// GetTemperature implements gpu.Device.
func (d *Device) GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return) {
	r := d.ret("GetTemperature")
	defer d.Mu.Unlock()
	return d.TempC, r
}

// GetPowerUsage implements gpu.Device.
func (d *Device) GetPowerUsage() (uint32, nvml.Return) {
	r := d.ret("GetPowerUsage")
	defer d.Mu.Unlock()
	return d.PowerMW, r
}

// GetClockInfo implements gpu.Device.
func (d *Device) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) {
	r := d.ret("GetClockInfo")
	defer d.Mu.Unlock()
	if c == nvml.CLOCK_MEM {
		return d.MemClockMHz, r
	}
	return d.SMClockMHz, r
}

// GetFanSpeed implements gpu.Device.
func (d *Device) GetFanSpeed() (uint32, nvml.Return) {
	r := d.ret("GetFanSpeed")
	defer d.Mu.Unlock()
	return d.Fan, r
}

// GetPerformanceState implements gpu.Device.
func (d *Device) GetPerformanceState() (nvml.Pstates, nvml.Return) {
	r := d.ret("GetPerformanceState")
	defer d.Mu.Unlock()
	return d.PState, r
}

// GetComputeRunningProcesses implements gpu.Device.
func (d *Device) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	r := d.ret("GetComputeRunningProcesses")
	defer d.Mu.Unlock()
	return slices.Clone(d.Compute), r
}

// GetGraphicsRunningProcesses implements gpu.Device.
func (d *Device) GetGraphicsRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	r := d.ret("GetGraphicsRunningProcesses")
	defer d.Mu.Unlock()
	return slices.Clone(d.Graphics), r
}

// GetCurrentClocksThrottleReasons implements gpu.Device.
func (d *Device) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	r := d.ret("GetCurrentClocksThrottleReasons")
	defer d.Mu.Unlock()
	return d.Throttle, r
}

// GetTotalEnergyConsumption implements gpu.Device.
func (d *Device) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	r := d.ret("GetTotalEnergyConsumption")
	defer d.Mu.Unlock()
	return d.EnergyMJ, r
}

// GetTotalEccErrors implements gpu.Device (volatile counters only).
func (d *Device) GetTotalEccErrors(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
	r := d.ret("GetTotalEccErrors")
	defer d.Mu.Unlock()
	if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED {
		return d.ECCUncorrected, r
	}
	return d.ECCCorrected, r
}

// GetRetiredPagesPendingStatus implements gpu.Device.
func (d *Device) GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return) {
	r := d.ret("GetRetiredPagesPendingStatus")
	defer d.Mu.Unlock()
	if d.RetiredPending {
		return nvml.FEATURE_ENABLED, r
	}
	return nvml.FEATURE_DISABLED, r
}

// GetRemappedRows implements gpu.Device.
func (d *Device) GetRemappedRows() (int, int, bool, bool, nvml.Return) {
	r := d.ret("GetRemappedRows")
	defer d.Mu.Unlock()
	return 0, 0, d.RemapPending, d.RemapFailed, r
}

// GetSupportedEventTypes implements gpu.Device.
func (d *Device) GetSupportedEventTypes() (uint64, nvml.Return) {
	r := d.ret("GetSupportedEventTypes")
	defer d.Mu.Unlock()
	return d.SupportedEvents, r
}

// RegisterEvents implements gpu.Device.
func (d *Device) RegisterEvents(types uint64, _ nvml.EventSet) nvml.Return {
	r := d.ret("RegisterEvents")
	defer d.Mu.Unlock()
	if r == nvml.SUCCESS {
		d.Registered |= types
	}
	return r
}
