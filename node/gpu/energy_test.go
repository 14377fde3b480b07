//go:build linux && cgo

package gpu_test

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// clocked opens a Sampler on lib whose clock is *now.
func clocked(t *testing.T, lib *gputest.Library, now *time.Time) *gpu.Sampler {
	t.Helper()
	s := open(t, lib)
	gpu.SetClock(s, func() time.Time { return *now })
	return s
}

// every samples s once a second for d, from *now on, calling each after
// every sample.
func every(t *testing.T, s *gpu.Sampler, now *time.Time, d time.Duration, each func([]gpu.Stats)) {
	t.Helper()
	for end := now.Add(d); now.Before(end); *now = now.Add(time.Second) {
		got, err := s.Sample(t.Context())
		if err != nil {
			t.Fatalf("Sample: %v", err)
		}
		if each != nil {
			each(got)
		}
	}
}

// TestEnergyReadRarely: the counter is read at the first sample and then
// once a minute; in between the figure grows by the power drawn.
func TestEnergyReadRarely(t *testing.T) {
	lib := gputest.NewLibrary(2)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clocked(t, lib, &now)
	d := lib.Devices[1]
	d.EnergyMJ, d.PowerMW = 1_000_000, 300_000
	var last []gpu.Stats
	every(t, s, &now, 30*time.Second, func(g []gpu.Stats) { last = g })
	if n := d.Calls("GetTotalEnergyConsumption"); n != 1 {
		t.Errorf("energy counter read %d times in 30 s; want once", n)
	}
	// 29 s at 300 W since the read: 8.7 kJ.
	if got, want := last[1].EnergyMJ, uint64(1_000_000+29*300_000); got != want {
		t.Errorf("energy after 29 s at 300 W: %d mJ; want %d", got, want)
	}
	d.Mu.Lock()
	d.EnergyMJ = 1_000_000 + 61*300_000 // the counter, drawn at the same power
	d.Mu.Unlock()
	every(t, s, &now, 32*time.Second, func(g []gpu.Stats) { last = g })
	if n := d.Calls("GetTotalEnergyConsumption"); n != 2 {
		t.Errorf("energy counter read %d times in 62 s; want twice", n)
	}
	// Read at 60 s (61 s of power in the counter), then 1 s more at 300 W.
	if got, want := last[1].EnergyMJ, uint64(1_000_000+62*300_000); got != want {
		t.Errorf("energy after the second read: %d mJ; want %d", got, want)
	}
}

// TestEnergyNeverBack: a counter lower than the integrated figure holds
// the figure until the counter catches up.
func TestEnergyNeverBack(t *testing.T) {
	lib := gputest.NewLibrary(1)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clocked(t, lib, &now)
	d := lib.Devices[0]
	d.EnergyMJ, d.PowerMW = 5_000_000, 700_000
	prev := uint64(0)
	every(t, s, &now, 3*time.Minute, func(g []gpu.Stats) {
		if g[0].EnergyMJ < prev {
			t.Fatalf("energy went back from %d to %d mJ", prev, g[0].EnergyMJ)
		}
		prev = g[0].EnergyMJ
	})
	if want := uint64(5_000_000 + 59*700_000); prev != want {
		t.Errorf("energy %d mJ; want it held at the highest figure given, %d", prev, want)
	}
}

// TestReadEnergy: a grant's edge reads the counter at the next sample, on
// that GPU only.
func TestReadEnergy(t *testing.T) {
	lib := gputest.NewLibrary(2)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clocked(t, lib, &now)
	every(t, s, &now, 5*time.Second, nil)
	lib.Devices[0].Mu.Lock()
	lib.Devices[0].EnergyMJ = 4242
	lib.Devices[0].Mu.Unlock()
	s.ReadEnergy(lib.Devices[0].UUID)
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n0, n1 := lib.Devices[0].Calls("GetTotalEnergyConsumption"), lib.Devices[1].Calls("GetTotalEnergyConsumption"); n0 != 2 || n1 != 1 {
		t.Errorf("energy counters read %d and %d times; want 2 (asked) and 1", n0, n1)
	}
	if got[0].EnergyMJ < 4242 {
		t.Errorf("energy %d mJ after ReadEnergy; want the counter, 4242", got[0].EnergyMJ)
	}
	var nilSampler *gpu.Sampler
	nilSampler.ReadEnergy("GPU-x") // no driver: nothing to read, no panic
}

// TestUnsupportedAskedOnce: a reading that answered NOT_SUPPORTED is not
// asked again; the others are asked every second; the power limit once a
// minute.
func TestUnsupportedAskedOnce(t *testing.T) {
	lib := gputest.NewLibrary(1)
	d := lib.Devices[0] // no fan (NewDevice)
	d.Fail["GetTotalEnergyConsumption"] = nvml.ERROR_NOT_SUPPORTED
	d.Fail["GetRetiredPagesPendingStatus"] = nvml.ERROR_NOT_SUPPORTED
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clocked(t, lib, &now)
	var last []gpu.Stats
	every(t, s, &now, 90*time.Second, func(g []gpu.Stats) { last = g })
	for method, want := range map[string]int{
		"GetFanSpeed": 1, "GetTotalEnergyConsumption": 1, "GetRetiredPagesPendingStatus": 1,
		"GetEnforcedPowerLimit": 1 + 2, // Open, then at 0 s and 60 s
		"GetUtilizationRates":   90, "GetPowerUsage": 90, "GetCurrentClocksThrottleReasons": 90,
		"GetMemoryInfo_v2": 90, "GetMemoryInfo": 1, // total, at Open
	} {
		if got := d.Calls(method); got != want {
			t.Errorf("%s called %d times in 90 s; want %d", method, got, want)
		}
	}
	if g := last[0]; g.EnergyMJ != 0 || g.FanPercent != -1 || g.Error != "" {
		t.Errorf("unsupported readings: energy %d, fan %d, error %q", g.EnergyMJ, g.FanPercent, g.Error)
	}
}

// TestPowerLimitChange: a power limit an administrator changes shows
// within a minute.
func TestPowerLimitChange(t *testing.T) {
	lib := gputest.NewLibrary(1)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clocked(t, lib, &now)
	every(t, s, &now, time.Second, nil)
	lib.Devices[0].Mu.Lock()
	lib.Devices[0].PowerLimitMW = 450_000
	lib.Devices[0].Mu.Unlock()
	var last []gpu.Stats
	every(t, s, &now, time.Minute, func(g []gpu.Stats) { last = g })
	if last[0].PowerLimitW != 450 {
		t.Errorf("power limit %v W a minute after it changed to 450 W", last[0].PowerLimitW)
	}
}

// TestMemoryReserved: memory used is as nvidia-smi shows it, the driver's
// reserved memory apart; a driver without v2 memory info gets v1, and v2 is
// not asked again.
func TestMemoryReserved(t *testing.T) {
	lib := gputest.NewLibrary(3)
	for _, d := range lib.Devices {
		d.MemReserved = 615 << 20
		d.Memory = nvml.Memory{Total: 141 << 30, Used: 615 << 20, Free: 141<<30 - 615<<20} // v1 counts it as used
	}
	lib.Devices[1].Fail["GetMemoryInfo_v2"] = nvml.ERROR_NOT_SUPPORTED
	lib.Devices[2].Fail["GetMemoryInfo_v2"] = nvml.ERROR_FUNCTION_NOT_FOUND // a driver before R510
	s := open(t, lib)
	for range 3 {
		got, err := s.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if g := got[0]; g.MemUsedBytes != 0 || g.MemReservedBytes != 615<<20 || g.MemTotalBytes != 141<<30 {
			t.Errorf("idle GPU: used %d, reserved %d of %d; want used 0, reserved 615 MiB", g.MemUsedBytes, g.MemReservedBytes, g.MemTotalBytes)
		}
		for _, g := range got[1:] {
			if g.MemUsedBytes != 615<<20 || g.MemReservedBytes != 0 || g.Error != "" {
				t.Errorf("GPU %d without v2: used %d, reserved %d, error %q; want v1's used", g.Index, g.MemUsedBytes, g.MemReservedBytes, g.Error)
			}
		}
	}
	for _, d := range lib.Devices[1:] {
		if n := d.Calls("GetMemoryInfo_v2"); n != 1 {
			t.Errorf("v2 memory info asked %d times where the driver has none; want once", n)
		}
	}
}
