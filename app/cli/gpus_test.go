package cli

import (
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
)

func TestWriteGPUsHealth(t *testing.T) {
	gpus := []app.GPU{
		{NodeName: "gpu1", Index: 0, Name: "NVIDIA H100 80GB HBM3", Health: "ok", Job: "7e82623a8db42109",
			JobName: "train-bert", JobOwner: "PKPK-MOXV-" + strings.Repeat("A", 40), JobOwnerName: "alice",
			ProcessList: []app.GPUProcess{{PID: 4242, MemBytes: 20 << 30, Job: "7e82623a8db42109", Owner: "PKPK-MOXV"}}},
		{NodeName: "gpu1", Index: 2, Name: "NVIDIA H100 80GB HBM3", Health: "quarantined", HealthReason: "XID 79 (GPU has fallen off the bus)"},
		{NodeName: "gpu1", Index: 3, Name: "NVIDIA H100 80GB HBM3", Health: "warning", HealthReason: "throttled: hw_thermal_slowdown",
			ProcessList: []app.GPUProcess{{PID: 99, MemBytes: 1 << 30}}},
		{NodeName: "old", Index: 0, Name: "NVIDIA T4"}, // a daemon older than health
		// A job whose record has not arrived: its short ID.
		{NodeName: "old", Index: 1, Name: "NVIDIA T4", Job: "0123456789abcdef0123"},
		// A DGX Spark: the system's memory, unified.
		{NodeName: "spark", Index: 0, Name: "NVIDIA GB10", MemUsedBytes: 40 << 30, MemTotalBytes: 119 << 30, MemUnified: true},
	}
	var b strings.Builder
	if err := writeGPUs(&b, gpus); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{
		"HEALTH", "JOB",
		"ok ", "train-bert (alice)",
		"pid 4242", "20.0 GiB", "job train-bert (alice)", "0123456789ab\n",
		"quarantined: XID 79 (GPU has fallen off the bus)",
		"warning: throttled: hw_thermal_slowdown",
		"pid 99", "outside labpool",
		"40.0 GiB/119.0 GiB unified",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("labpool gpus does not say %q", want)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 9 {
		t.Errorf("%d lines; want a header, 6 GPUs and 2 processes", lines)
	}
	for _, hash := range []string{"7e82623a8db42109", "PKPK-MOXV", "0123456789abcdef0123"} {
		if strings.Contains(out, hash) {
			t.Errorf("labpool gpus shows the ID %q where a person reads a name", hash)
		}
	}
}
