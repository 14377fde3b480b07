//go:build linux && cgo

package gpu_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// sample reads s once and returns GPU i.
func sample(t *testing.T, s *gpu.Sampler, i int) gpu.Stats {
	t.Helper()
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	return got[i]
}

func wantHealth(t *testing.T, g gpu.Stats, health, reason string) {
	t.Helper()
	if g.Health != health || g.HealthReason != reason {
		t.Errorf("gpu %d health %q (%q); want %q (%q)", g.Index, g.Health, g.HealthReason, health, reason)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		name           string
		setup          func(lib *gputest.Library, d *gputest.Device)
		health, reason string
	}{
		{"ok", func(*gputest.Library, *gputest.Device) {}, gpu.HealthOK, ""},
		{"thermal throttling", func(_ *gputest.Library, d *gputest.Device) {
			d.Throttle = nvml.ClocksThrottleReasonHwThermalSlowdown | nvml.ClocksThrottleReasonSwPowerCap
		}, gpu.HealthWarning, "throttled: hw_thermal_slowdown"},
		// A GPU at full load sits at its power limit: normal operation.
		{"sw power cap at full load is normal", func(_ *gputest.Library, d *gputest.Device) {
			d.Throttle = nvml.ClocksThrottleReasonSwPowerCap
			d.Util, d.PowerMW = nvml.Utilization{Gpu: 100, Memory: 80}, 699_000
		}, gpu.HealthOK, ""},
		{"sync boost and application clocks are normal", func(_ *gputest.Library, d *gputest.Device) {
			d.Throttle = nvml.ClocksThrottleReasonSyncBoost | nvml.ClocksThrottleReasonApplicationsClocksSetting |
				nvml.ClocksThrottleReasonDisplayClockSetting
		}, gpu.HealthOK, ""},
		{"every slowdown warns", func(_ *gputest.Library, d *gputest.Device) {
			d.Throttle = nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksThrottleReasonSwThermalSlowdown |
				nvml.ClocksThrottleReasonHwThermalSlowdown | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown |
				nvml.ClocksThrottleReasonSwPowerCap
		}, gpu.HealthWarning, "throttled: hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown"},
		{"idle is no throttling", func(_ *gputest.Library, d *gputest.Device) {
			d.Throttle = nvml.ClocksThrottleReasonGpuIdle
		}, gpu.HealthOK, ""},
		{"critical XID", func(lib *gputest.Library, _ *gputest.Device) { lib.XID(1, 79) },
			gpu.HealthQuarantined, "XID 79 (GPU has fallen off the bus)"},
		{"application XID is counted only", func(lib *gputest.Library, _ *gputest.Device) { lib.XID(1, 13) }, gpu.HealthOK, ""},
		{"uncorrectable ECC", func(_ *gputest.Library, d *gputest.Device) { d.ECCUncorrected = 2 },
			gpu.HealthQuarantined, "uncorrectable ECC errors"},
		{"retired pages pending", func(_ *gputest.Library, d *gputest.Device) { d.RetiredPending = true },
			gpu.HealthQuarantined, "retired pages or remapped rows pending (reset the GPU)"},
		{"remapped rows pending", func(_ *gputest.Library, d *gputest.Device) { d.RemapPending = true },
			gpu.HealthQuarantined, "retired pages or remapped rows pending (reset the GPU)"},
		{"XID and ECC", func(lib *gputest.Library, d *gputest.Device) { lib.XID(1, 48); d.ECCUncorrected = 1 },
			gpu.HealthQuarantined, "XID 48 (double-bit ECC error); uncorrectable ECC errors"},
		{"lost beats all", func(lib *gputest.Library, d *gputest.Device) {
			lib.XID(1, 79)
			d.Fail["GetMemoryInfo_v2"] = nvml.ERROR_GPU_IS_LOST
		}, gpu.HealthLost, "GPU is lost (read memory: ERROR_GPU_IS_LOST)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := gputest.NewLibrary(2)
			s := open(t, lib)
			tt.setup(lib, lib.Devices[1])
			got, err := s.Sample(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			wantHealth(t, got[0], gpu.HealthOK, "")
			wantHealth(t, got[1], tt.health, tt.reason)
		})
	}
}

// TestXIDCountAndClear: XIDs are counted, a critical one quarantines until
// Clear, and a new one after Clear quarantines again.
func TestXIDCountAndClear(t *testing.T) {
	lib := gputest.NewLibrary(2)
	s := open(t, lib)
	uuid := lib.Devices[0].UUID
	lib.XID(0, 13)
	lib.XID(0, 79)
	g := sample(t, s, 0)
	if g.XIDErrors != 2 {
		t.Errorf("xid_errors %d; want 2", g.XIDErrors)
	}
	wantHealth(t, g, gpu.HealthQuarantined, "XID 79 (GPU has fallen off the bus)")
	wantHealth(t, sample(t, s, 0), gpu.HealthQuarantined, "XID 79 (GPU has fallen off the bus)") // sticky
	if _, err := s.Clear(t.Context(), uuid); err != nil {
		t.Fatal(err)
	}
	g = sample(t, s, 0)
	wantHealth(t, g, gpu.HealthOK, "")
	if g.XIDErrors != 2 {
		t.Errorf("xid_errors after Clear %d; want 2 (a count since start)", g.XIDErrors)
	}
	lib.XID(0, 94)
	wantHealth(t, sample(t, s, 0), gpu.HealthQuarantined, "XID 94 (contained ECC error)")
	if _, err := s.Clear(t.Context(), "GPU-nope"); err == nil {
		t.Error("Clear(unknown GPU) = nil; want an error")
	}
}

// TestECCClear: clearing accepts the uncorrectable errors counted so far
// and a pending retirement while it lasts; more errors, or a new pending
// retirement, quarantine again. An Ack kept across a restart does the same.
func TestECCClear(t *testing.T) {
	lib := gputest.NewLibrary(1)
	s := open(t, lib)
	d := lib.Devices[0]
	d.Mu.Lock()
	d.ECCUncorrected, d.RemapPending, d.RemapFailed = 3, true, true
	d.Mu.Unlock()
	wantHealth(t, sample(t, s, 0), gpu.HealthQuarantined,
		"uncorrectable ECC errors; retired pages or remapped rows pending (reset the GPU); row remapping failed")
	ack, err := s.Clear(t.Context(), d.UUID)
	if err != nil || ack != (gpu.Ack{ECCUncorrected: 3, RetiredPending: true, RemapFailed: true}) {
		t.Fatalf("Clear = %+v, %v; want 3 errors, pending and the failed remapping accepted", ack, err)
	}
	wantHealth(t, sample(t, s, 0), gpu.HealthOK, "")
	d.Mu.Lock()
	d.RemapPending, d.RemapFailed = false, false
	d.Mu.Unlock()
	wantHealth(t, sample(t, s, 0), gpu.HealthOK, "")
	d.Mu.Lock()
	d.RemapPending = true
	d.Mu.Unlock()
	wantHealth(t, sample(t, s, 0), gpu.HealthQuarantined, "retired pages or remapped rows pending (reset the GPU)")
	d.Mu.Lock()
	d.RemapPending, d.ECCUncorrected = false, 4
	d.Mu.Unlock()
	wantHealth(t, sample(t, s, 0), gpu.HealthQuarantined, "uncorrectable ECC errors")

	// A restart: a new Sampler quarantines for the old count, until the
	// kept Ack is acknowledged.
	s2 := open(t, lib)
	wantHealth(t, sample(t, s2, 0), gpu.HealthQuarantined, "uncorrectable ECC errors")
	if err := s2.Acknowledge(t.Context(), d.UUID, gpu.Ack{ECCUncorrected: 4}); err != nil {
		t.Fatal(err)
	}
	wantHealth(t, sample(t, s2, 0), gpu.HealthOK, "")
}

// TestCorrectableECCWarning: growth of the correctable count warns for a
// while, then the GPU is ok again.
func TestCorrectableECCWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lib := gputest.NewLibrary(1)
		s := open(t, lib)
		d := lib.Devices[0]
		d.ECCCorrected = 10 // before the agent started: no warning
		wantHealth(t, sample(t, s, 0), gpu.HealthOK, "")
		d.Mu.Lock()
		d.ECCCorrected = 12
		d.Mu.Unlock()
		wantHealth(t, sample(t, s, 0), gpu.HealthWarning, "correctable ECC errors growing: 12")
		time.Sleep(9 * time.Minute)
		wantHealth(t, sample(t, s, 0), gpu.HealthWarning, "correctable ECC errors growing: 12")
		time.Sleep(2 * time.Minute)
		wantHealth(t, sample(t, s, 0), gpu.HealthOK, "")
	})
}

// TestLostGPU: a lost GPU is read no more, and the others keep reporting.
func TestLostGPU(t *testing.T) {
	lib := gputest.NewLibrary(3)
	s := open(t, lib)
	d := lib.Devices[1]
	d.Mu.Lock()
	d.Fail["GetUtilizationRates"] = nvml.ERROR_GPU_IS_LOST
	d.Mu.Unlock()
	for range 3 {
		got, err := s.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		wantHealth(t, got[0], gpu.HealthOK, "")
		wantHealth(t, got[1], gpu.HealthLost, "GPU is lost (read utilization: ERROR_GPU_IS_LOST)")
		wantHealth(t, got[2], gpu.HealthOK, "")
		if got[1].UUID != d.UUID || got[1].Name == "" {
			t.Errorf("a lost GPU keeps its identity: %+v", got[1])
		}
	}
	// Once lost, the device is not called again: a hang there is harmless.
	d.Hang = make(chan struct{})
	defer close(d.Hang)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.Sample(ctx); err != nil {
		t.Fatalf("Sample with a lost GPU that hangs: %v", err)
	}
}

// TestLostAtOpen: a GPU whose handle NVML cannot give (lost before the
// sampler opened) is listed by index as lost, beside the others.
func TestLostAtOpen(t *testing.T) {
	lib := gputest.NewLibrary(3)
	lib.HandleRet = map[int]nvml.Return{1: nvml.ERROR_GPU_IS_LOST}
	s := open(t, lib)
	if n := len(s.Devices()); n != 3 {
		t.Fatalf("%d GPUs listed; want 3, the lost one included", n)
	}
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantHealth(t, got[0], gpu.HealthOK, "")
	wantHealth(t, got[1], gpu.HealthLost, "GPU is lost (open: ERROR_GPU_IS_LOST)")
	wantHealth(t, got[2], gpu.HealthOK, "")
	if got[1].Index != 1 {
		t.Errorf("the lost GPU reads index %d", got[1].Index)
	}
}

// TestEventsHang: an event set whose Wait blocks costs the Sample its
// deadline, never the agent.
func TestEventsHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lib := gputest.NewLibrary(1)
		s, err := gpu.OpenLibrary(lib, gpu.Config{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		hang := make(chan struct{})
		lib.Events.SetHang(hang)
		if _, err := s.Sample(t.Context()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sample(hung event wait) = %v; want DeadlineExceeded", err)
		}
		lib.Events.SetHang(nil)
		close(hang)
		synctest.Wait()
		if _, err := s.Sample(t.Context()); err != nil {
			t.Fatalf("Sample after the wait returned: %v", err)
		}
		s.Close()
		if !lib.Events.Freed() {
			t.Error("Close did not free the event set")
		}
	})
}

// TestNoEvents: NVML without events, or GPUs that do not support XID
// events, sample as before.
func TestNoEvents(t *testing.T) {
	lib := gputest.NewLibrary(2)
	lib.EventsRet = nvml.ERROR_NOT_SUPPORTED
	s := open(t, lib)
	wantHealth(t, sample(t, s, 1), gpu.HealthOK, "")

	lib = gputest.NewLibrary(2)
	for _, d := range lib.Devices {
		d.SupportedEvents = 0
	}
	s = open(t, lib)
	wantHealth(t, sample(t, s, 1), gpu.HealthOK, "")
	if !lib.Events.Freed() {
		t.Error("an event set no GPU registered with is kept")
	}
	if r := lib.Devices[0].Registered; r != 0 {
		t.Errorf("registered %x on a GPU without XID events", r)
	}
}

func TestThrottleWarns(t *testing.T) {
	for name, want := range map[string]bool{
		"hw_slowdown": true, "hw_thermal_slowdown": true, "hw_power_brake_slowdown": true, "sw_thermal_slowdown": true,
		"sw_power_cap": false, "sync_boost": false, "applications_clocks_setting": false, "gpu_idle": false,
		"display_clocks_setting": false, "not_a_reason": false,
	} {
		if got := gpu.ThrottleWarns(name); got != want {
			t.Errorf("ThrottleWarns(%q) = %v; want %v", name, got, want)
		}
	}
}
