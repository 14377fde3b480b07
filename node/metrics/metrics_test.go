package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/metrics/metricstest"
)

// testGPUs are two GPUs: one busy with a labpool job on a throttled GPU
// with an energy counter, one free with a critical XID and no counter, and
// a lost one.
func testGPUs() []gpu.Stats {
	return []gpu.Stats{
		{Index: 0, UUID: "GPU-aaaa", Name: "NVIDIA A100-SXM4-40GB", UtilPercent: 87, MemUtilPercent: 41.5,
			MemUsedBytes: 10 << 30, MemTotalBytes: 40 << 30, TempC: 71, PowerW: 312.25, SMClockMHz: 1410, MemClockMHz: 1215,
			Health: gpu.HealthWarning, HealthReason: "throttled: hw_thermal_slowdown", Throttle: []string{"hw_thermal_slowdown", "hw_thermal_slowdown"},
			EnergyMJ: 123456789, Processes: []gpu.Process{{PID: 7, MemBytes: 1 << 30}}},
		{Index: 1, UUID: "GPU-bbbb", Name: `Odd "name" \ here`, MemTotalBytes: 40 << 30, TempC: 35, PowerW: 60,
			Health: gpu.HealthQuarantined, HealthReason: "XID 79 (GPU has fallen off the bus)", XIDErrors: 3, ECCUncorrected: 2, RetiredPending: true},
		{Index: 2, UUID: "GPU-cccc", Name: "NVIDIA A100-SXM4-40GB", Health: gpu.HealthLost, HealthReason: "GPU is lost"},
	}
}

// testHolding is who holds testGPUs: job-1 GPU 0 and its process, job-2
// the lost GPU 2.
func testHolding() alloc.Holding {
	return alloc.Holding{
		GPUs:  map[string]alloc.Holder{"GPU-aaaa": {Kind: alloc.Job, ID: "job-1"}, "GPU-cccc": {Kind: alloc.Job, ID: "job-2"}},
		Procs: map[uint32]alloc.Holder{7: {Kind: alloc.Job, ID: "job-1", Member: "ALIC-AAAA"}},
	}
}

const wantText = `# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 1410
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 0
# HELP DCGM_FI_DEV_MEM_CLOCK Memory clock frequency (in MHz).
# TYPE DCGM_FI_DEV_MEM_CLOCK gauge
DCGM_FI_DEV_MEM_CLOCK{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 1215
DCGM_FI_DEV_MEM_CLOCK{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 0
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 71
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 35
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 312.25
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 60
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 123456789
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 0
# HELP DCGM_FI_DEV_MEM_COPY_UTIL Memory utilization (in %).
# TYPE DCGM_FI_DEV_MEM_COPY_UTIL gauge
DCGM_FI_DEV_MEM_COPY_UTIL{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 41.5
DCGM_FI_DEV_MEM_COPY_UTIL{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 0
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 0
DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 79
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 30720
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 40960
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 10240
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 0
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 0
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 2
# HELP DCGM_FI_DEV_RETIRED_PENDING Total number of pages pending retirement.
# TYPE DCGM_FI_DEV_RETIRED_PENDING counter
DCGM_FI_DEV_RETIRED_PENDING{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 0
DCGM_FI_DEV_RETIRED_PENDING{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 1
# HELP labpool_gpu_health GPU health as labpool judges it from NVML: 1 for the GPU's state (ok, warning, quarantined, lost).
# TYPE labpool_gpu_health gauge
labpool_gpu_health{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice",health="warning"} 1
labpool_gpu_health{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person="",health="quarantined"} 1
labpool_gpu_health{gpu="2",UUID="GPU-cccc",device="nvidia2",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-2",owner="BOBB-BBBB",owner_name="",person="bob",health="lost"} 1
# HELP labpool_gpu_xid_errors_total XID errors seen on the GPU since the agent started.
# TYPE labpool_gpu_xid_errors_total counter
labpool_gpu_xid_errors_total{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice"} 0
labpool_gpu_xid_errors_total{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="Odd \"name\" \\ here",Hostname="dgx1",job="",owner="",owner_name="",person=""} 3
labpool_gpu_xid_errors_total{gpu="2",UUID="GPU-cccc",device="nvidia2",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-2",owner="BOBB-BBBB",owner_name="",person="bob"} 0
# HELP labpool_gpu_throttle 1 for each clock throttle reason active now (NVML's names).
# TYPE labpool_gpu_throttle gauge
labpool_gpu_throttle{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="dgx1",job="job-1",owner="ALIC-AAAA",owner_name="alice-laptop",person="alice",reason="hw_thermal_slowdown"} 1
`

// names is the pool's device names.
func names(member string) string {
	return map[string]string{"ALIC-AAAA": "alice-laptop"}[member]
}

// persons names the person whose device member is: bob's device has no
// name of its own here, and its job is still bob's.
func persons(member string) string {
	return map[string]string{"ALIC-AAAA": "alice", "BOBB-BBBB": "bob"}[member]
}

func owners(job string) string {
	if job == "job-2" {
		return "BOBB-BBBB"
	}
	return ""
}

// TestWrite checks the exposition line by line: families in dcgm-exporter's
// names and help, labels in its order then job, owner (the device that
// launched the job), owner_name (its name) and person (whose device it
// is: what a lab sums by), escaping, a lost
// GPU showing only its health, the energy counter only where supported.
func TestWrite(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Snapshot{Hostname: "dgx1", GPUs: testGPUs(), Holding: testHolding(), Owner: owners, Name: names, Person: persons}); err != nil {
		t.Fatal(err)
	}
	got, want := strings.Split(b.String(), "\n"), strings.Split(wantText, "\n")
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

func TestWriteNoGPUs(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Snapshot{Hostname: "laptop"}); err != nil || b.Len() != 0 {
		t.Errorf("Write of no GPUs = %q, %v; want nothing", b.String(), err)
	}
}

func TestFormatValue(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 1410: "1410", -3: "-3", 312.25: "312.25", 1e300: "1e+300", 0.001: "0.001"} {
		if got := formatValue(in); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr        string
		allowRemote bool
		wantErr     error
	}{
		{"127.0.0.1:9400", false, nil},
		{"127.0.0.2:9400", false, nil},
		{"[::1]:9400", false, nil},
		{"localhost:9400", false, nil},
		{"0.0.0.0:9400", false, ErrNotLoopback},
		{":9400", false, ErrNotLoopback},
		{"[::]:9400", false, ErrNotLoopback},
		{"10.1.2.3:9400", false, ErrNotLoopback},
		{"dgx1.lab:9400", false, ErrNotLoopback},
		{"0.0.0.0:9400", true, nil},
	}
	for _, tt := range tests {
		err := CheckAddr(tt.addr, tt.allowRemote)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr != nil && !strings.Contains(err.Error(), "--metrics-allow-remote")) {
			t.Errorf("CheckAddr(%q, %v) = %v, want %v naming the rule", tt.addr, tt.allowRemote, err, tt.wantErr)
		}
	}
	for _, bad := range []string{"9400", "127.0.0.1", "127.0.0.1:"} {
		if err := CheckAddr(bad, true); err == nil {
			t.Errorf("CheckAddr(%q) = nil, want an error", bad)
		}
	}
	if _, err := New(Config{Addr: "0.0.0.0:9400"}, nil, nil, nil, nil); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("New on 0.0.0.0 = %v, want %v", err, ErrNotLoopback)
	}
}

type fixedSource struct {
	s  agent.Sample
	ok bool
}

func (f fixedSource) Latest() (agent.Sample, bool) { return f.s, f.ok }

func TestServeHTTP(t *testing.T) {
	srv, err := New(Config{Addr: "127.0.0.1:0", Hostname: "dgx1", Person: persons}, fixedSource{agent.Sample{GPUs: testGPUs(), Holding: testHolding()}, true}, owners, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:9400/metrics", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != ContentType || rec.Body.String() != wantText {
		t.Errorf("GET /metrics = %d %q:\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	for _, c := range []struct{ method, path string }{{"POST", "/metrics"}, {"GET", "/"}, {"GET", "/metrics/x"}} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(c.method, "http://127.0.0.1:9400"+c.path, nil))
		if rec.Code == 200 {
			t.Errorf("%s %s = 200, want a refusal", c.method, c.path)
		}
	}
}

// TestRun serves on a loopback port and stops with its context.
func TestRun(t *testing.T) {
	srv, err := New(Config{Addr: "127.0.0.1:0"}, fixedSource{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestPromtool(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Snapshot{Hostname: "dgx1", GPUs: testGPUs(), Holding: testHolding(), Owner: owners, Name: names, Person: persons}); err != nil {
		t.Fatal(err)
	}
	metricstest.Promtool(t, b.String())
	// A line promtool must refuse, to show the check has teeth.
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = io.MultiReader(strings.NewReader(b.String()), strings.NewReader("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 1\n"))
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "error") {
		t.Errorf("promtool accepted a malformed line: %v\n%s", err, out)
	}
}

var _ http.Handler = (*Server)(nil)

// BenchmarkWrite is one scrape of 8 GPUs: what a Prometheus scrape costs
// the agent.
func BenchmarkWrite(b *testing.B) {
	var gpus []gpu.Stats
	for i := range 8 {
		g := testGPUs()[0]
		g.Index, g.UUID = i, fmt.Sprintf("GPU-%04d", i)
		gpus = append(gpus, g)
	}
	held := testHolding()
	for _, g := range gpus {
		held.HoldGPU(g.UUID, held.GPU("GPU-aaaa"))
	}
	snap := Snapshot{Hostname: "dgx1", GPUs: gpus, Holding: held, Owner: owners, Name: names, Person: persons}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, snap); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}
