//go:build linux && cgo

package gpu_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

func open(t *testing.T, lib *gputest.Library) *gpu.Sampler {
	t.Helper()
	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatalf("OpenLibrary: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func idleStats(i int) gpu.Stats {
	d := gputest.NewDevice(i)
	return gpu.Stats{
		Index: i, UUID: d.UUID, Name: d.Name, MemUsedBytes: d.Memory.Used, MemTotalBytes: d.Memory.Total,
		TempC: 30, PowerW: 70, PowerLimitW: 700, SMClockMHz: 345, MemClockMHz: 2619,
		FanPercent: -1, PState: 0, Processes: []gpu.Process{},
		Health: gpu.HealthOK, Throttle: []string{},
	}
}

func TestSample(t *testing.T) {
	tests := []struct {
		name  string
		setup func(d *gputest.Device)
		want  func(s *gpu.Stats)
	}{
		{"idle, no fan", func(d *gputest.Device) {}, func(s *gpu.Stats) {}},
		{"busy", func(d *gputest.Device) {
			d.Util = nvml.Utilization{Gpu: 97, Memory: 41}
			d.Memory.Used = 60 << 30
			d.PowerMW, d.TempC, d.PState = 650_500, 71, nvml.PSTATE_2
			d.Fail = nil
			d.Fan = 55
		}, func(s *gpu.Stats) {
			s.UtilPercent, s.MemUtilPercent, s.MemUsedBytes = 97, 41, 60<<30
			s.PowerW, s.TempC, s.PState, s.FanPercent = 650.5, 71, 2, 55
		}},
		{"processes merged by pid", func(d *gputest.Device) {
			d.Compute = []nvml.ProcessInfo{{Pid: 300, UsedGpuMemory: 1 << 30}, {Pid: 20, UsedGpuMemory: math.MaxUint64}}
			d.Graphics = []nvml.ProcessInfo{{Pid: 300, UsedGpuMemory: 2 << 30}, {Pid: 7, UsedGpuMemory: 5 << 20}}
		}, func(s *gpu.Stats) {
			s.Processes = []gpu.Process{{PID: 7, MemBytes: 5 << 20}, {PID: 20, Compute: true}, {PID: 300, MemBytes: 2 << 30, Compute: true}}
		}},
		{"power and clocks not supported", func(d *gputest.Device) {
			for _, m := range []string{"GetPowerUsage", "GetEnforcedPowerLimit", "GetClockInfo", "GetPerformanceState"} {
				d.Fail[m] = nvml.ERROR_NOT_SUPPORTED
			}
		}, func(s *gpu.Stats) {
			s.PowerW, s.PowerLimitW, s.SMClockMHz, s.MemClockMHz, s.PState = 0, 0, 0, 0, -1
		}},
		{"processes not permitted", func(d *gputest.Device) {
			d.Compute = []nvml.ProcessInfo{{Pid: 1}}
			d.Fail["GetComputeRunningProcesses"] = nvml.ERROR_NO_PERMISSION
		}, func(s *gpu.Stats) {}},
		{"unknown pstate", func(d *gputest.Device) { d.PState = nvml.PSTATE_UNKNOWN }, func(s *gpu.Stats) { s.PState = -1 }},
		{"gpu lost: read no further", func(d *gputest.Device) {
			d.Fail["GetTemperature"] = nvml.ERROR_GPU_IS_LOST
			d.Fail["GetUtilizationRates"] = nvml.ERROR_GPU_IS_LOST
		}, func(s *gpu.Stats) {
			*s = gpu.Stats{Index: s.Index, UUID: s.UUID, Name: s.Name, MemTotalBytes: s.MemTotalBytes,
				FanPercent: -1, PState: -1, Processes: []gpu.Process{}, Throttle: []string{},
				Health: gpu.HealthLost, HealthReason: "GPU is lost (read utilization: ERROR_GPU_IS_LOST)",
				Error: "read utilization: ERROR_GPU_IS_LOST"}
		}},
		{"an old GPU: no health readings", func(d *gputest.Device) {
			for _, m := range []string{"GetCurrentClocksThrottleReasons", "GetTotalEnergyConsumption", "GetTotalEccErrors",
				"GetRetiredPagesPendingStatus", "GetRemappedRows"} {
				d.Fail[m] = nvml.ERROR_NOT_SUPPORTED
			}
		}, func(s *gpu.Stats) {}},
		{"energy and throttle", func(d *gputest.Device) {
			d.EnergyMJ = 123456789
			d.Throttle = nvml.ClocksThrottleReasonGpuIdle | nvml.ClocksThrottleReasonApplicationsClocksSetting
		}, func(s *gpu.Stats) {
			s.EnergyMJ, s.Throttle = 123456789, []string{"applications_clocks_setting"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := gputest.NewLibrary(2)
			s := open(t, lib)
			tt.setup(lib.Devices[1])
			got, err := s.Sample(t.Context())
			if err != nil {
				t.Fatalf("Sample: %v", err)
			}
			want := []gpu.Stats{idleStats(0), idleStats(1)}
			tt.want(&want[1])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Sample (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name       string
		initRet    nvml.Return
		devices    []*gputest.Device
		wantErr    error
		wantMsg    string
		wantIdx    []int
		wantClosed bool // Shutdown called by a failed Open
	}{
		{"no library", nvml.ERROR_LIBRARY_NOT_FOUND, nil, gpu.ErrNoDriver, "no NVIDIA GPU found", nil, false},
		{"driver not loaded", nvml.ERROR_DRIVER_NOT_LOADED, nil, gpu.ErrNoDriver, "no NVIDIA GPU found: ERROR_DRIVER_NOT_LOADED", nil, false},
		{"other init error", nvml.ERROR_UNKNOWN, nil, nvml.ERROR_UNKNOWN, "init nvml: ERROR_UNKNOWN", nil, false},
		{"no gpu", nvml.SUCCESS, nil, nil, "", nil, false},
		{"one hidden", nvml.SUCCESS, []*gputest.Device{gputest.NewDevice(0), nil, gputest.NewDevice(2)}, nil, "", []int{0, 2}, false},
		{"all hidden", nvml.SUCCESS, []*gputest.Device{nil}, nvml.ERROR_NO_PERMISSION, "open gpu 0: ERROR_NO_PERMISSION", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := &gputest.Library{InitRet: tt.initRet, Devices: tt.devices}
			s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
			if !errors.Is(err, tt.wantErr) || (err != nil && err.Error() != tt.wantMsg) {
				t.Fatalf("OpenLibrary() error = %v; want %q", err, tt.wantMsg)
			}
			if _, shutdowns := lib.Counts(); (shutdowns == 1) != tt.wantClosed {
				t.Errorf("Shutdown called %d times after Open; want closed = %v", shutdowns, tt.wantClosed)
			}
			if err != nil {
				return
			}
			defer s.Close()
			var idx []int
			for _, d := range s.Devices() {
				idx = append(idx, d.Index)
			}
			if !cmp.Equal(idx, tt.wantIdx) {
				t.Errorf("Devices() indexes = %v; want %v", idx, tt.wantIdx)
			}
		})
	}
}

func TestOpenMissingLibrary(t *testing.T) {
	_, err := gpu.Open(gpu.Config{LibraryPath: "libnvidia-ml-labpool-missing.so.1"})
	if !errors.Is(err, gpu.ErrNoDriver) {
		t.Fatalf("Open(missing library) = %v; want ErrNoDriver", err)
	}
}

func TestDevices(t *testing.T) {
	s := open(t, gputest.NewLibrary(2))
	want := []gpu.Info{
		{Index: 0, UUID: "GPU-00000000-0000-0000-0000-000000000000", Name: "NVIDIA H100 80GB HBM3", MemTotalBytes: 80 << 30, PowerLimitW: 700},
		{Index: 1, UUID: "GPU-00000000-0000-0000-0000-000000000001", Name: "NVIDIA H100 80GB HBM3", MemTotalBytes: 80 << 30, PowerLimitW: 700},
	}
	if diff := cmp.Diff(want, s.Devices()); diff != "" {
		t.Errorf("Devices (-want +got):\n%s", diff)
	}
}

func TestClose(t *testing.T) {
	lib := gputest.NewLibrary(1)
	s := open(t, lib)
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if inits, shutdowns := lib.Counts(); inits != 1 || shutdowns != 1 {
		t.Errorf("Init, Shutdown called %d, %d times; want 1, 1", inits, shutdowns)
	}
	if _, err := s.Sample(t.Context()); !errors.Is(err, gpu.ErrClosed) {
		t.Errorf("Sample after Close = %v; want ErrClosed", err)
	}
}

func TestNilSampler(t *testing.T) {
	var s *gpu.Sampler
	if d := s.Devices(); d != nil {
		t.Errorf("Devices() = %v; want nil", d)
	}
	if _, err := s.Sample(t.Context()); !errors.Is(err, gpu.ErrNoDriver) {
		t.Errorf("Sample() = %v; want ErrNoDriver", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

// TestSampleHungDriver checks that a driver that never returns costs each
// caller its deadline, not its goroutine, and that calls resume after it.
func TestSampleHungDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lib := gputest.NewLibrary(2)
		s, err := gpu.OpenLibrary(lib, gpu.Config{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		hang := make(chan struct{})
		lib.Devices[1].Hang = hang

		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		if _, err := s.Sample(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Sample(hung) = %v; want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != 200*time.Millisecond {
			t.Errorf("Sample(hung) took %v; want 200ms", d)
		}
		// The stuck call holds the driver: the next one waits for its own
		// Timeout (1s) and gives up, and so does Close.
		if _, err := s.Sample(t.Context()); err == nil || !strings.Contains(err.Error(), "stuck") {
			t.Fatalf("Sample behind a hung call = %v; want a stuck-call error", err)
		}
		if err := s.Close(); err == nil {
			t.Fatal("Close behind a hung call = nil; want an error")
		}

		close(hang)
		synctest.Wait()
		if got, err := s.Sample(t.Context()); err != nil || len(got) != 2 {
			t.Fatalf("Sample after the driver returned = %d stats, %v; want 2, nil", len(got), err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, shutdowns := lib.Counts(); shutdowns != 1 {
			t.Errorf("Shutdown called %d times; want 1", shutdowns)
		}
	})
}

func TestOpenHungInit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lib := gputest.NewLibrary(1)
		lib.Hang = make(chan struct{})
		_, err := gpu.OpenLibrary(lib, gpu.Config{Timeout: time.Second})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("OpenLibrary(hung Init) = %v; want DeadlineExceeded", err)
		}
		close(lib.Hang)
		synctest.Wait()
		if inits, shutdowns := lib.Counts(); inits != 1 || shutdowns != 1 {
			t.Errorf("after a late Init: Init, Shutdown called %d, %d times; want 1, 1", inits, shutdowns)
		}
	})
}
