//go:build linux && cgo

package gpu

import (
	"crypto/sha256"
	"fmt"
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// SimulatedName is the model name every simulated GPU reports, so that no
// one mistakes one for real hardware.
const SimulatedName = "Simulated H100 80GB"

// Simulated returns a Library of n GPUs whose figures move over time like a
// training job's: for demos and end-to-end tests on machines without a GPU
// (`LABPOOL_SIMULATE_GPUS=N`). seed makes UUIDs and phases differ per machine.
func Simulated(n int, seed string) Library {
	return &simLibrary{n: n, seed: seed, start: time.Now()}
}

// OpenSimulated opens a Sampler of n simulated GPUs (Simulated).
func OpenSimulated(n int, seed string, cfg Config) (*Sampler, error) {
	return OpenLibrary(Simulated(n, seed), cfg)
}

type simLibrary struct {
	n     int
	seed  string
	start time.Time
}

func (l *simLibrary) Init() nvml.Return                  { return nvml.SUCCESS }
func (l *simLibrary) Shutdown() nvml.Return              { return nvml.SUCCESS }
func (l *simLibrary) DeviceGetCount() (int, nvml.Return) { return l.n, nvml.SUCCESS }
func (l *simLibrary) EventSetCreate() (nvml.EventSet, nvml.Return) {
	return nil, nvml.ERROR_NOT_SUPPORTED
}

func (l *simLibrary) DeviceGetHandleByIndex(i int) (Device, nvml.Return) {
	if i < 0 || i >= l.n {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", l.seed, i))
	return &simDevice{lib: l, index: i, sum: sum, phase: float64(sum[0]) / 255 * 2 * math.Pi}, nvml.SUCCESS
}

type simDevice struct {
	lib   *simLibrary
	index int
	sum   [32]byte
	phase float64
}

const simMemTotal = 80 << 30

// load is the device's utilization in [0, 1] now.
func (d *simDevice) load() float64 {
	t := time.Since(d.lib.start).Seconds()
	return 0.55 + 0.4*math.Sin(t/7+d.phase)*math.Cos(t/23+d.phase/2)
}

func (d *simDevice) GetUUID() (string, nvml.Return) {
	s := d.sum
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16]), nvml.SUCCESS
}
func (d *simDevice) GetName() (string, nvml.Return) { return SimulatedName, nvml.SUCCESS }
func (d *simDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	used := uint64(float64(simMemTotal) * (0.2 + 0.6*d.load()))
	return nvml.Memory{Total: simMemTotal, Used: used, Free: simMemTotal - used}, nvml.SUCCESS
}
func (d *simDevice) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	m, _ := d.GetMemoryInfo()
	return nvml.Memory_v2{Total: m.Total, Free: m.Free, Used: m.Used}, nvml.SUCCESS
}
func (d *simDevice) GetEnforcedPowerLimit() (uint32, nvml.Return) { return 700_000, nvml.SUCCESS }
func (d *simDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	u := uint32(100 * d.load())
	return nvml.Utilization{Gpu: u, Memory: u * 2 / 3}, nvml.SUCCESS
}
func (d *simDevice) GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return) {
	return uint32(35 + 40*d.load()), nvml.SUCCESS
}
func (d *simDevice) GetPowerUsage() (uint32, nvml.Return) {
	return uint32(90_000 + 560_000*d.load()), nvml.SUCCESS
}
func (d *simDevice) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) {
	if c == nvml.CLOCK_MEM {
		return 2619, nvml.SUCCESS
	}
	return uint32(1200 + 780*d.load()), nvml.SUCCESS
}
func (d *simDevice) GetFanSpeed() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
func (d *simDevice) GetPerformanceState() (nvml.Pstates, nvml.Return) {
	return nvml.PSTATE_0, nvml.SUCCESS
}
func (d *simDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return nil, nvml.SUCCESS
}
func (d *simDevice) GetGraphicsRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return nil, nvml.SUCCESS
}
func (d *simDevice) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	return 0, nvml.SUCCESS
}

// GetTotalEnergyConsumption integrates the power drawn since the library
// started, in mJ, at the mean load.
func (d *simDevice) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	return uint64((90_000 + 560_000*0.55) * time.Since(d.lib.start).Seconds()), nvml.SUCCESS
}
func (d *simDevice) GetTotalEccErrors(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
	return 0, nvml.SUCCESS
}
func (d *simDevice) GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return) {
	return nvml.FEATURE_DISABLED, nvml.ERROR_NOT_SUPPORTED // Hopper remaps rows instead
}
func (d *simDevice) GetRemappedRows() (int, int, bool, bool, nvml.Return) {
	return 0, 0, false, false, nvml.SUCCESS
}
func (d *simDevice) GetSupportedEventTypes() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
func (d *simDevice) RegisterEvents(uint64, nvml.EventSet) nvml.Return {
	return nvml.ERROR_NOT_SUPPORTED
}
