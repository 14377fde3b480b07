//go:build linux && cgo

package gpu_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// The tests below run the real NVML code against NVIDIA's mock
// libnvidia-ml.so. The library reads its profile once, when it is loaded,
// and a tripped failure stays tripped: each test runs in a process of its
// own (the test binary run again with the environment the library reads),
// so each starts from its profile.

const mockChild = "LABPOOL_GPU_MOCK_CHILD" // names the test a child process runs

// inMock returns true in the child process running test t on the mock
// library. In the parent it runs that child, with profile (a file of the
// mock's profiles directory) and the overrides body, reports its outcome,
// and returns false. It skips where the mock library is absent.
func inMock(t *testing.T, profile, overrides string) bool {
	t.Helper()
	child, _ := inMockEnv(t, profile, overrides)
	return child
}

// inMockEnv is inMock with env added to the child's environment; in the
// parent it returns the child's output (stdout and stderr).
func inMockEnv(t *testing.T, profile, overrides string, env ...string) (child bool, out string) {
	t.Helper()
	if os.Getenv(mockChild) == t.Name() {
		return true, ""
	}
	m, err := gputest.FindMock()
	if err != nil {
		t.Skip(err.Error())
	}
	dir := t.TempDir()
	prof, ovr := filepath.Join(dir, "profile.yaml"), filepath.Join(dir, "overrides.yaml")
	b, err := os.ReadFile(m.Profile(profile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prof, b, 0o644); err != nil {
		t.Fatal(err)
	}
	writeOverrides(t, ovr, overrides)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), mockChild+"="+t.Name(), "LABPOOL_GPU_MOCK_LIB="+m.Lib,
		"MOCK_NVML_CONFIG="+prof, "MOCK_NVML_OVERRIDES="+ovr, "MOCK_NVML_OVERRIDES_TTL=200ms")
	cmd.Env = append(cmd.Env, env...)
	res, err := cmd.CombinedOutput()
	if len(env) == 0 || err != nil { // a call log is the caller's to read
		t.Logf("on the mock library (%s):\n%s", profile, res)
	}
	if err != nil {
		t.Fatalf("the test on the mock library failed: %v", err)
	}
	return false, string(res)
}

// writeOverrides replaces the mock's overrides file atomically.
func writeOverrides(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("version: 1\n"+body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// openMock opens a Sampler on the mock library (in the child process).
func openMock(t *testing.T) *gpu.Sampler {
	t.Helper()
	cfg := gpu.DefaultConfig()
	cfg.LibraryPath = os.Getenv("LABPOOL_GPU_MOCK_LIB")
	s, err := gpu.Open(cfg)
	if err != nil {
		t.Fatalf("Open(mock NVML): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// setOverrides writes overrides (in the child process) and returns once
// the library has had time to re-read them.
func setOverrides(t *testing.T, body string) {
	t.Helper()
	writeOverrides(t, os.Getenv("MOCK_NVML_OVERRIDES"), body)
	time.Sleep(500 * time.Millisecond) // TTL 200ms
}

// waitGPU samples s until cond(GPU i) holds, for up to 10 s.
func waitGPU(t *testing.T, s *gpu.Sampler, i int, what string, cond func(gpu.Stats) bool) []gpu.Stats {
	t.Helper()
	var got []gpu.Stats
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if got, err = s.Sample(t.Context()); err != nil {
			t.Fatalf("Sample: %v", err)
		}
		if cond(got[i]) {
			return got
		}
	}
	t.Fatalf("gpu %d never %s: %+v", i, what, got[i])
	return nil
}

// TestMockH100 checks every reading labpool takes against the H100
// profile: identity, memory, power, temperature, utilization, clocks,
// energy, ECC, throttling and processes.
func TestMockH100(t *testing.T) {
	if !inMock(t, "h100.yaml", "") {
		return
	}
	s := openMock(t)
	devs := s.Devices()
	if len(devs) != 8 {
		t.Fatalf("%d GPUs; the profile has 8", len(devs))
	}
	for i, d := range devs {
		want := gpu.Info{Index: i, UUID: fmt.Sprintf("GPU-01000100-0000-0000-0000-%012d", i),
			Name: "NVIDIA H100 80GB HBM3", MemTotalBytes: 85899345920, PowerLimitW: 700}
		d.PCIBusID, d.Links, d.MIG = "", nil, nil // checked in TestMockTopology
		if !reflect.DeepEqual(d, want) {
			t.Errorf("Devices()[%d] = %+v; the profile states %+v", i, d, want)
		}
	}
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		want := gpu.Stats{Index: g.Index, UUID: devs[g.Index].UUID, Name: "NVIDIA H100 80GB HBM3",
			MemTotalBytes: 85899345920, MemUsedBytes: 0, MemReservedBytes: 1 << 30, PowerW: 95, PowerLimitW: 700, TempC: 34,
			SMClockMHz: 345, MemClockMHz: 1593, FanPercent: -1, PState: 0, EnergyMJ: 600000,
			Health: gpu.HealthOK, Throttle: []string{}, Processes: []gpu.Process{}}
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("gpu %d reads\n%+v; the profile states\n%+v", g.Index, g, want)
		}
	}

	// Everything the overrides can change at run time.
	setOverrides(t, `all:
  utilization: {gpu: 5}
devices:
  "1":
    utilization: {gpu: 97, memory: 60}
    thermal: {temperature_gpu_c: 88}
    power: {current_draw_mw: 612345, total_energy_consumption_mj: 9876543}
    clocks: {sm_current: 1980, memory_current: 1593}
    memory: {used_bytes: 21474836480, free_bytes: 64424509440}
    clocks_throttle_reasons: {hw_thermal_slowdown: true, gpu_idle: false}
    processes:
      - {pid: 4242, type: "C", name: "python", used_memory_mib: 20480}
`)
	got = waitGPU(t, s, 1, "read the overrides", func(g gpu.Stats) bool { return g.UtilPercent == 97 })
	g := got[1]
	want := gpu.Stats{Index: 1, UUID: devs[1].UUID, Name: devs[1].Name, UtilPercent: 97, MemUtilPercent: 60,
		MemUsedBytes: 21474836480, MemTotalBytes: 85899345920, MemReservedBytes: 1 << 30, TempC: 88, PowerW: 612.345, PowerLimitW: 700,
		SMClockMHz: 1980, MemClockMHz: 1593, FanPercent: -1, PState: 0,
		EnergyMJ: g.EnergyMJ, // the counter is read once a minute: TestMockEnergyCounter
		Health:   gpu.HealthWarning, HealthReason: "throttled: hw_thermal_slowdown", Throttle: []string{"hw_thermal_slowdown"},
		Processes: []gpu.Process{{PID: 4242, MemBytes: 20480 << 20, Compute: true}}}
	if fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("gpu 1 after the overrides reads\n%+v; want\n%+v", g, want)
	}
	if got[0].UtilPercent != 5 || got[0].Health != gpu.HealthOK {
		t.Errorf("gpu 0 after `all: utilization 5` reads %+v", got[0])
	}
}

// TestMockFaultECCXID: `failure: {mode: ecc_uncorrectable, xid: {code: 79}}`
// quarantines that GPU through the event set and the ECC counters; the
// others stay ok.
func TestMockFaultECCXID(t *testing.T) {
	if !inMock(t, "h100.yaml", "") {
		return
	}
	s := openMock(t)
	if g := waitGPU(t, s, 2, "ok", func(g gpu.Stats) bool { return true }); g[2].Health != gpu.HealthOK {
		t.Fatalf("gpu 2 before the fault: %+v", g[2])
	}
	setOverrides(t, `devices:
  "2":
    failure: {mode: ecc_uncorrectable, xid: {code: 79}}
`)
	got := waitGPU(t, s, 2, "faulty", func(g gpu.Stats) bool { return g.Health != gpu.HealthOK })
	g := got[2]
	// The XID and the ECC errors show in the same sample, the first one
	// that sees the fault.
	if want := "XID 79 (GPU has fallen off the bus); uncorrectable ECC errors"; g.Health != gpu.HealthQuarantined || !strings.HasPrefix(g.HealthReason, want) {
		t.Errorf("gpu 2 at its fault: %s %q; want quarantined %q", g.Health, g.HealthReason, want)
	}
	t.Logf("gpu 2: health %s: %s; xid_errors %d, ecc_uncorrected %d", g.Health, g.HealthReason, g.XIDErrors, g.ECCUncorrected)
	if g.XIDErrors != 1 {
		t.Errorf("xid_errors %d; want 1", g.XIDErrors)
	}
	for i, o := range got {
		if i != 2 && (o.Health != gpu.HealthOK || o.XIDErrors != 0) {
			t.Errorf("gpu %d caught gpu 2's fault: %+v", i, o)
		}
	}
	waitGPU(t, s, 2, "counting uncorrectable ECC errors", func(g gpu.Stats) bool {
		return g.ECCUncorrected > 0 && strings.Contains(g.HealthReason, "uncorrectable ECC errors")
	})
	if _, err := s.Clear(t.Context(), g.UUID); err != nil {
		t.Fatal(err)
	}
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gpu 2 after Clear: %s %q (ECC %d)", got[2].Health, got[2].HealthReason, got[2].ECCUncorrected)
}

// TestMockLost: `mode: lost` makes GPU 3 lost; the others keep reporting
// and nothing hangs.
func TestMockLost(t *testing.T) {
	if !inMock(t, "h100.yaml", "") {
		return
	}
	s := openMock(t)
	setOverrides(t, `devices:
  "3":
    failure: {mode: lost}
`)
	got := waitGPU(t, s, 3, "lost", func(g gpu.Stats) bool { return g.Health == gpu.HealthLost })
	t.Logf("gpu 3: %s: %s", got[3].Health, got[3].HealthReason)
	for range 5 {
		start := time.Now()
		got, err := s.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("a sample with a lost GPU took %v", d)
		}
		for i, g := range got {
			if i != 3 && (g.Health != gpu.HealthOK || g.TempC != 34 || g.Error != "") {
				t.Errorf("gpu %d beside a lost one: %+v", i, g)
			}
		}
		if got[3].Health != gpu.HealthLost || got[3].UUID == "" {
			t.Errorf("gpu 3: %+v", got[3])
		}
	}
}

// TestMockT4: another profile (T4: no energy counter in it) reads as the
// profile says, and what it lacks leaves zero values, not errors.
func TestMockT4(t *testing.T) {
	if !inMock(t, "t4.yaml", "") {
		return
	}
	s := openMock(t)
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		t.Logf("gpu %d: %+v", g.Index, g)
		if g.Error != "" || g.Health != gpu.HealthOK || g.Name != "NVIDIA T4" || g.MemTotalBytes != 17179869184 ||
			g.PowerW != 12 || g.PowerLimitW != 70 || g.TempC != 30 || g.SMClockMHz != 300 || g.MemClockMHz != 5001 {
			t.Errorf("gpu %d: %+v", g.Index, g)
		}
	}
}

// TestMockLostAtStart: a GPU lost before the sampler opens shows as lost,
// by index, beside the others.
func TestMockLostAtStart(t *testing.T) {
	if !inMock(t, "h100.yaml", `devices:
  "1":
    failure: {mode: lost}
`) {
		return
	}
	s := openMock(t)
	if n := len(s.Devices()); n != 8 {
		t.Errorf("%d GPUs listed; want 8, the lost one included", n)
	}
	got, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		t.Logf("gpu %d: %s %q %s", g.Index, g.Health, g.HealthReason, g.UUID)
	}
	if len(got) != 8 || got[1].Health != gpu.HealthLost || got[1].Index != 1 {
		t.Fatalf("gpu 1 lost at start reads %+v", got[1])
	}
	for i, g := range got {
		if i != 1 && (g.Health != gpu.HealthOK || g.TempC != 34) {
			t.Errorf("gpu %d beside a lost one: %+v", i, g)
		}
	}
}

// TestMockSampleCost measures one Sample of the H100 profile's 8 GPUs on
// the mock library, health readings and the event drain included, and
// logs it (a figure, not a check: run with -v).
func TestMockSampleCost(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	if !inMock(t, "h100.yaml", "") {
		return
	}
	s := openMock(t)
	ctx := t.Context()
	r := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Sample(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	t.Logf("Sample of 8 GPUs on the mock NVML: %v/op, %d B/op, %d allocs/op (%d runs)",
		time.Duration(r.NsPerOp()), r.AllocedBytesPerOp(), r.AllocsPerOp(), r.N)
}
