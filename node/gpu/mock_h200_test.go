//go:build linux && cgo

package gpu_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// What a real H200 showed (issue 16), as tests on NVIDIA's mock library:
// a GPU at full load sits at its power limit (sw_power_cap) and is healthy;
// memory used leaves the driver's reserved memory apart; the energy counter
// (3 ms of CPU a call there) is read once a minute, and a reading the GPU
// does not support (the fan of an SXM board) is asked once.

// TestMockFullLoad: sw_power_cap at full load keeps every GPU ok;
// hw_thermal_slowdown on one makes it warning; memory used is what the
// processes use, the reserved memory apart.
func TestMockFullLoad(t *testing.T) {
	if !inMock(t, "h100.yaml", "") {
		return
	}
	s := openMock(t)
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if g.MemUsedBytes != 0 || g.MemReservedBytes != 1<<30 || g.MemUsedBytes+g.MemReservedBytes > g.MemTotalBytes {
			t.Errorf("idle gpu %d: used %d, reserved %d of %d; want used 0, reserved 1 GiB (the profile's)",
				g.Index, g.MemUsedBytes, g.MemReservedBytes, g.MemTotalBytes)
		}
	}
	const total, reserved, used = 85899345920, 1 << 30, 20 << 30
	setOverrides(t, fmt.Sprintf(`all:
  utilization: {gpu: 100, memory: 85}
  power: {current_draw_mw: 699000}
  clocks: {sm_current: 1755}
  clocks_throttle_reasons: {sw_power_cap: true, gpu_idle: false}
  memory: {used_bytes: %d, free_bytes: %d}
  processes:
    - {pid: 4242, type: "C", name: "python", used_memory_mib: 20480}
devices:
  "1":
    thermal: {temperature_gpu_c: 91}
    clocks_throttle_reasons: {sw_power_cap: true, hw_thermal_slowdown: true, gpu_idle: false}
`, used, total-reserved-used))
	got = waitGPU(t, s, 1, "at full load", func(g gpu.Stats) bool { return g.UtilPercent == 100 && g.TempC == 91 })
	for _, g := range got {
		if !slices.Contains(g.Throttle, "sw_power_cap") || g.PowerW != 699 {
			t.Errorf("gpu %d at full load: throttle %v, power %v W; want sw_power_cap at 699 W", g.Index, g.Throttle, g.PowerW)
		}
		if g.MemUsedBytes != used || g.MemReservedBytes != reserved {
			t.Errorf("gpu %d: used %d, reserved %d; want used %d (its process's), reserved %d", g.Index, g.MemUsedBytes, g.MemReservedBytes, used, reserved)
		}
		if g.Index == 1 {
			continue
		}
		if g.Health != gpu.HealthOK || g.HealthReason != "" {
			t.Errorf("gpu %d at its power limit: %s %q; want ok", g.Index, g.Health, g.HealthReason)
		}
	}
	if g := got[1]; g.Health != gpu.HealthWarning || g.HealthReason != "throttled: hw_thermal_slowdown" {
		t.Errorf("gpu 1 in thermal slowdown: %s %q; want warning \"throttled: hw_thermal_slowdown\"", g.Health, g.HealthReason)
	}
}

// TestMockEnergyCounter: the counter is read at the first sample and a
// minute later (the sampler's clock driven by the test); in between the
// figure grows with the power drawn.
func TestMockEnergyCounter(t *testing.T) {
	if !inMock(t, "h100.yaml", "") {
		return
	}
	s := openMock(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gpu.SetClock(s, func() time.Time { return now })
	setOverrides(t, `devices:
  "1":
    power: {current_draw_mw: 500000, total_energy_consumption_mj: 9876543}
`)
	var got []gpu.Stats
	for range 60 { // 0 s to 59 s
		var err error
		if got, err = s.Sample(t.Context()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	// The profile's power is 95 W; GPU 1 draws 500 W.
	if g := got[0]; g.EnergyMJ != 600000+59*95000 {
		t.Errorf("gpu 0 after 59 s at 95 W: %d mJ; want %d", g.EnergyMJ, 600000+59*95000)
	}
	if g := got[1]; g.EnergyMJ != 9876543+59*500000 {
		t.Errorf("gpu 1 after 59 s at 500 W: %d mJ; want %d", g.EnergyMJ, 9876543+59*500000)
	}
	setOverrides(t, `devices:
  "1":
    power: {current_draw_mw: 500000, total_energy_consumption_mj: 50000000}
`)
	got, err := s.Sample(t.Context()) // at 60 s: the counter again
	if err != nil {
		t.Fatal(err)
	}
	if g := got[1]; g.EnergyMJ != 50000000 {
		t.Errorf("gpu 1 at 60 s: %d mJ; want the counter's 50000000", g.EnergyMJ)
	}
}

// mockCall matches a call in the mock's log (MOCK_NVML_DEBUG): one line
// per call, "[NVML] nvmlDeviceGetFanSpeed -> 0%".
var mockCall = regexp.MustCompile(`(?m)^\[NVML\] (nvml\w+)`)

const (
	sampleFrom = "=== sampling from here"
	sampleTo   = "=== sampling to here"
)

// TestMockCallLog: in the mock's own call log over 30 s of sampling (31
// samples, the sampler's clock driven by the test), the energy counter is
// read at most twice per GPU, the fan (not supported on the profile's SXM
// boards) once, and nothing that cannot change (name, UUID, memory total)
// at all.
func TestMockCallLog(t *testing.T) {
	child, out := inMockEnv(t, "h100.yaml", "", "MOCK_NVML_DEBUG=1")
	if child {
		s := openMock(t)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		gpu.SetClock(s, func() time.Time { return now })
		fmt.Fprintln(os.Stderr, sampleFrom)
		for range 31 {
			if _, err := s.Sample(t.Context()); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Second)
		}
		fmt.Fprintln(os.Stderr, sampleTo)
		return
	}
	_, log, ok := strings.Cut(out, sampleFrom)
	log, _, ok2 := strings.Cut(log, sampleTo)
	if !ok || !ok2 {
		t.Fatalf("no sampling in the child's output:\n%s", out)
	}
	calls := map[string]int{}
	for _, m := range mockCall.FindAllStringSubmatch(log, -1) {
		calls[m[1]]++
	}
	if len(calls) == 0 {
		t.Fatalf("the mock logged no call (MOCK_NVML_DEBUG):\n%s", out)
	}
	const gpus, seconds = 8, 30
	total := 0
	for name, n := range calls {
		total += n
		t.Logf("%-45s %4d calls, %.3f per GPU per second", name, n, float64(n)/gpus/seconds)
	}
	t.Logf("all calls: %.2f per GPU per second", float64(total)/gpus/seconds)
	for name, most := range map[string]int{
		"nvmlDeviceGetTotalEnergyConsumption": 2 * gpus,
		"nvmlDeviceGetFanSpeed":               gpus, // NOT_SUPPORTED: asked once
		"nvmlDeviceGetEnforcedPowerLimit":     gpus,
		"nvmlDeviceGetName":                   0,
		"nvmlDeviceGetUUID":                   0,
		"nvmlDeviceGetMemoryInfo":             0, // v1: v2 answers
	} {
		if calls[name] > most {
			t.Errorf("%s called %d times over 30 s; want at most %d", name, calls[name], most)
		}
	}
	if calls["nvmlDeviceGetFanSpeed"] != gpus {
		t.Errorf("fan speed asked %d times; want once per GPU", calls["nvmlDeviceGetFanSpeed"])
	}
	if n := calls["nvmlDeviceGetUtilizationRates"]; n != 31*gpus {
		t.Errorf("utilization read %d times; want every sample, %d", n, 31*gpus)
	}
}
