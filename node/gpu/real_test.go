//go:build linux && cgo

package gpu_test

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/gpu"
)

// TestRealGPU reads the GPUs of this machine through the real NVML, and
// compares what is static with nvidia-smi where it is installed.
func TestRealGPU(t *testing.T) {
	s, err := gpu.Open(gpu.DefaultConfig())
	if errors.Is(err, gpu.ErrNoDriver) {
		t.Skipf("no NVIDIA driver: %v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	stats, err := s.Sample(t.Context())
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(stats) != len(s.Devices()) {
		t.Fatalf("Sample returned %d GPUs; Devices lists %d", len(stats), len(s.Devices()))
	}
	for _, g := range stats {
		t.Logf("gpu %d: %+v", g.Index, g)
		checkStats(t, g)
	}
	compareSMI(t, s.Devices())
}

func checkStats(t *testing.T, g gpu.Stats) {
	t.Helper()
	switch {
	case !strings.HasPrefix(g.UUID, "GPU-") && !strings.HasPrefix(g.UUID, "MIG-"):
		t.Errorf("gpu %d: UUID %q", g.Index, g.UUID)
	case g.Name == "":
		t.Errorf("gpu %d: no name", g.Index)
	case g.MemTotalBytes == 0 || g.MemUsedBytes > g.MemTotalBytes:
		t.Errorf("gpu %d: memory used %d of %d", g.Index, g.MemUsedBytes, g.MemTotalBytes)
	case g.UtilPercent < 0 || g.UtilPercent > 100:
		t.Errorf("gpu %d: utilization %v", g.Index, g.UtilPercent)
	case g.TempC <= 0 || g.TempC > 120:
		t.Errorf("gpu %d: temperature %v", g.Index, g.TempC)
	case g.FanPercent < -1 || g.FanPercent > 100:
		t.Errorf("gpu %d: fan %d", g.Index, g.FanPercent)
	case g.Error != "":
		t.Errorf("gpu %d: %s", g.Index, g.Error)
	}
}

// compareSMI checks UUID, name and memory total against nvidia-smi.
func compareSMI(t *testing.T, devs []gpu.Info) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "nvidia-smi",
		"--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits").Output()
	if err != nil {
		t.Logf("no comparison with nvidia-smi: %v", err)
		return
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(devs) {
		t.Fatalf("nvidia-smi lists %d GPUs; NVML %d", len(lines), len(devs))
	}
	for i, line := range lines {
		f := strings.Split(line, ", ")
		if len(f) != 4 {
			t.Fatalf("nvidia-smi line %q", line)
		}
		mib, _ := strconv.ParseUint(f[3], 10, 64)
		d := devs[i]
		if f[0] != strconv.Itoa(d.Index) || f[1] != d.UUID || f[2] != d.Name || mib != d.MemTotalBytes>>20 {
			t.Errorf("nvidia-smi says %q; NVML %+v", line, d)
		}
	}
}
