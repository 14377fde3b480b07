//go:build linux && cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The benchmarks below run the real NVML path: the system's
// libnvidia-ml.so.1, or the library LABPOOL_GPU_MOCK_LIB names (NVIDIA's
// mock, see mock_test.go). Without a driver they skip. On a machine with a
// GPU:
//
//	go test -run '^$' -bench Real -benchtime 100x ./node/gpu
//
// On the mock (8 H100s):
//
//	LABPOOL_GPU_MOCK_LIB=$(readlink -f ../shared/mocknvml/libnvidia-ml.so.550.163.01) \
//	MOCK_NVML_CONFIG=../shared/mocknvml/profiles/h100.yaml \
//	go test -run '^$' -bench Real -benchtime 100x ./node/gpu

// openReal opens a Sampler on the real NVML library (or the mock's), with
// every call counted and timed; it skips b without a driver.
func openReal(b *testing.B) (*Sampler, *callLog) {
	b.Helper()
	log := &callLog{}
	lib := countingLibrary{Library: newLibrary(os.Getenv("LABPOOL_GPU_MOCK_LIB")), log: log}
	s, err := OpenLibrary(lib, DefaultConfig())
	if errors.Is(err, ErrNoDriver) {
		b.Skipf("no NVIDIA driver: %v", err)
	}
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	if len(s.Devices()) == 0 {
		b.Skip("no GPU")
	}
	return s, log
}

// BenchmarkRealSample measures one Sample of every GPU here, taken once a
// second as the agent takes them (the sampler's clock moves 1 s per
// Sample), and reports its CPU time (cpu-ns/op, the process's user and
// system time) and the NVML calls made per GPU per second (calls/gpu/s),
// with each call's count and mean cost logged (-v).
func BenchmarkRealSample(b *testing.B) {
	s, log := openReal(b)
	clock := time.Now()
	s.now = func() time.Time { return clock }
	ctx := context.Background()
	if _, err := s.Sample(ctx); err != nil { // the first sample reads what later ones may not
		b.Fatal(err)
	}
	clock = clock.Add(time.Second)
	log.reset()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Sample(ctx); err != nil {
			b.Fatal(err)
		}
		clock = clock.Add(time.Second)
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	n, gpus := float64(b.N), float64(len(s.Devices()))
	b.ReportMetric(float64(cpu)/n, "cpu-ns/op")
	b.ReportMetric(float64(log.total())/n/gpus, "calls/gpu/s")
	for _, c := range log.byCost() {
		b.Logf("%-36s %6.3f calls/gpu/s, %9v mean, %5.1f%% of the calls' time",
			c.name, float64(c.n)/n/gpus, c.mean(), 100*float64(c.d)/float64(log.totalTime()))
	}
}

// BenchmarkRealCalls measures each NVML call a Sampler may make, on GPU 0:
// wall time per call (ns/op) and CPU time (cpu-ns/op).
func BenchmarkRealCalls(b *testing.B) {
	s, _ := openReal(b)
	d := s.devs[0].(countingDevice).Device
	calls := []struct {
		name string
		fn   func() nvml.Return
	}{
		{"GetUtilizationRates", func() nvml.Return { _, r := d.GetUtilizationRates(); return r }},
		{"GetMemoryInfo", func() nvml.Return { _, r := d.GetMemoryInfo(); return r }},
		{"GetMemoryInfo_v2", func() nvml.Return { _, r := d.GetMemoryInfo_v2(); return r }},
		{"GetTemperature", func() nvml.Return { _, r := d.GetTemperature(nvml.TEMPERATURE_GPU); return r }},
		{"GetPowerUsage", func() nvml.Return { _, r := d.GetPowerUsage(); return r }},
		{"GetEnforcedPowerLimit", func() nvml.Return { _, r := d.GetEnforcedPowerLimit(); return r }},
		{"GetFanSpeed", func() nvml.Return { _, r := d.GetFanSpeed(); return r }},
		{"GetPerformanceState", func() nvml.Return { _, r := d.GetPerformanceState(); return r }},
		{"GetClockInfo", func() nvml.Return { _, r := d.GetClockInfo(nvml.CLOCK_SM); return r }},
		{"GetComputeRunningProcesses", func() nvml.Return { _, r := d.GetComputeRunningProcesses(); return r }},
		{"GetGraphicsRunningProcesses", func() nvml.Return { _, r := d.GetGraphicsRunningProcesses(); return r }},
		{"GetCurrentClocksThrottleReasons", func() nvml.Return { _, r := d.GetCurrentClocksThrottleReasons(); return r }},
		{"GetTotalEnergyConsumption", func() nvml.Return { _, r := d.GetTotalEnergyConsumption(); return r }},
		{"GetTotalEccErrors", func() nvml.Return {
			_, r := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
			return r
		}},
		{"GetRetiredPagesPendingStatus", func() nvml.Return { _, r := d.GetRetiredPagesPendingStatus(); return r }},
		{"GetRemappedRows", func() nvml.Return { _, _, _, _, r := d.GetRemappedRows(); return r }},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			ret := c.fn()
			cpu0 := cpuTime()
			for b.Loop() {
				c.fn()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if ret != nvml.SUCCESS {
				b.Logf("%s answers %v", c.name, ret)
			}
		})
	}
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// callLog counts and times the NVML calls of a countingDevice.
type callLog struct {
	mu    sync.Mutex // guards calls
	calls map[string]*callStat
}

type callStat struct {
	name string
	n    int
	d    time.Duration
}

func (c callStat) mean() time.Duration { return c.d / time.Duration(max(1, c.n)) }

func (l *callLog) add(name string, start time.Time) {
	d := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[string]*callStat{}
	}
	c := l.calls[name]
	if c == nil {
		c = &callStat{name: name}
		l.calls[name] = c
	}
	c.n++
	c.d += d
}

func (l *callLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = nil
}

func (l *callLog) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.calls[name]; c != nil {
		return c.n
	}
	return 0
}

func (l *callLog) total() int {
	n := 0
	for _, c := range l.byCost() {
		n += c.n
	}
	return n
}

func (l *callLog) totalTime() time.Duration {
	var d time.Duration
	for _, c := range l.byCost() {
		d += c.d
	}
	return max(d, 1)
}

// byCost lists the calls, costliest first.
func (l *callLog) byCost() []callStat {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]callStat, 0, len(l.calls))
	for _, c := range l.calls {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b callStat) int { return int(b.d - a.d) })
	return out
}

func (l *callLog) String() string {
	s := ""
	for _, c := range l.byCost() {
		s += fmt.Sprintf("%s=%d ", c.name, c.n)
	}
	return s
}

// countingLibrary hands out countingDevices.
type countingLibrary struct {
	Library
	log *callLog
}

func (l countingLibrary) DeviceGetHandleByIndex(i int) (Device, nvml.Return) {
	d, ret := l.Library.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return countingDevice{d, l.log}, ret
}

// countingDevice logs each call a Sampler makes.
type countingDevice struct {
	Device
	log *callLog
}

func (d countingDevice) GetUUID() (string, nvml.Return) {
	defer d.log.add("GetUUID", time.Now())
	return d.Device.GetUUID()
}
func (d countingDevice) GetName() (string, nvml.Return) {
	defer d.log.add("GetName", time.Now())
	return d.Device.GetName()
}
func (d countingDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	defer d.log.add("GetMemoryInfo", time.Now())
	return d.Device.GetMemoryInfo()
}
func (d countingDevice) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	defer d.log.add("GetMemoryInfo_v2", time.Now())
	return d.Device.GetMemoryInfo_v2()
}
func (d countingDevice) GetEnforcedPowerLimit() (uint32, nvml.Return) {
	defer d.log.add("GetEnforcedPowerLimit", time.Now())
	return d.Device.GetEnforcedPowerLimit()
}
func (d countingDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	defer d.log.add("GetUtilizationRates", time.Now())
	return d.Device.GetUtilizationRates()
}
func (d countingDevice) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	defer d.log.add("GetTemperature", time.Now())
	return d.Device.GetTemperature(s)
}
func (d countingDevice) GetPowerUsage() (uint32, nvml.Return) {
	defer d.log.add("GetPowerUsage", time.Now())
	return d.Device.GetPowerUsage()
}
func (d countingDevice) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) {
	defer d.log.add("GetClockInfo", time.Now())
	return d.Device.GetClockInfo(c)
}
func (d countingDevice) GetFanSpeed() (uint32, nvml.Return) {
	defer d.log.add("GetFanSpeed", time.Now())
	return d.Device.GetFanSpeed()
}
func (d countingDevice) GetPerformanceState() (nvml.Pstates, nvml.Return) {
	defer d.log.add("GetPerformanceState", time.Now())
	return d.Device.GetPerformanceState()
}
func (d countingDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	defer d.log.add("GetComputeRunningProcesses", time.Now())
	return d.Device.GetComputeRunningProcesses()
}
func (d countingDevice) GetGraphicsRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	defer d.log.add("GetGraphicsRunningProcesses", time.Now())
	return d.Device.GetGraphicsRunningProcesses()
}
func (d countingDevice) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	defer d.log.add("GetCurrentClocksThrottleReasons", time.Now())
	return d.Device.GetCurrentClocksThrottleReasons()
}
func (d countingDevice) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	defer d.log.add("GetTotalEnergyConsumption", time.Now())
	return d.Device.GetTotalEnergyConsumption()
}
func (d countingDevice) GetTotalEccErrors(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
	defer d.log.add("GetTotalEccErrors", time.Now())
	return d.Device.GetTotalEccErrors(t, c)
}
func (d countingDevice) GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return) {
	defer d.log.add("GetRetiredPagesPendingStatus", time.Now())
	return d.Device.GetRetiredPagesPendingStatus()
}
func (d countingDevice) GetRemappedRows() (int, int, bool, bool, nvml.Return) {
	defer d.log.add("GetRemappedRows", time.Now())
	return d.Device.GetRemappedRows()
}
