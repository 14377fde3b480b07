//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/metrics/metricstest"
)

// scrapeMetrics fetches http://addr/metrics from inside h's namespace, where
// the agent serves them on loopback.
func (h *host) scrapeMetrics(addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", h.ns, "curl", "-sf", "--max-time", "5", "http://"+addr+"/metrics").Output()
	if err != nil {
		return "", fmt.Errorf("curl http://%s/metrics in %s: %v", addr, h.name, err)
	}
	return string(out), nil
}

// metricLine is the value of the first line of text for metric whose
// labels contain every one of labels, and whether there is one.
func metricLine(text, metric string, labels ...string) (float64, bool) {
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, metric+"{") {
			continue
		}
		end := strings.LastIndexByte(l, '}')
		ok := end > 0
		for _, want := range labels {
			ok = ok && strings.Contains(l[:end+1], want)
		}
		if ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(l[end+1:]), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestMetrics runs an agent on the mock NVML library (H100 profile) with
// --metrics on loopback, scrapes it inside the namespace, checks the
// readings and labels against the profile, follows an override, and has
// promtool check the text. A second machine, with simulated GPUs and a
// dockerd, runs a job: its GPU carries the job's ID and owner, and the
// report counts the job's GPU time and energy.
func TestMetrics(t *testing.T) {
	l := newLAN(t, "gpu1", "gpu2")
	gpu1, gpu2 := l.host("gpu1"), l.host("gpu2")
	const addr = "127.0.0.1:9400"

	// A non-loopback address is refused before any agent starts.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", gpu1.ns, bin, "--data", gpu1.data, "agent", "--metrics", "0.0.0.0:9400").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "metrics_loopback_only") {
		t.Fatalf("agent --metrics 0.0.0.0:9400: %v: %s; want exit 2 naming the rule", err, out)
	}

	mock := gpu1.useMockNVML("h100.yaml")
	gpu1.start("agent", "--name", "gpu1", "--iface", "eth0", "--listen", ":7420", "--metrics", addr)
	gpu1.waitDaemon()
	var text string
	waitFor(t, 20*time.Second, "8 GPUs in the metrics", func() error {
		text, err = gpu1.scrapeMetrics(addr)
		if err == nil && strings.Count(text, "DCGM_FI_DEV_GPU_TEMP{") != 8 {
			err = fmt.Errorf("%d GPU_TEMP lines", strings.Count(text, "DCGM_FI_DEV_GPU_TEMP{"))
		}
		return err
	})
	for i := range 8 {
		labels := []string{fmt.Sprintf(`gpu="%d"`, i), `UUID="` + h100UUID(i) + `"`, fmt.Sprintf(`device="nvidia%d"`, i),
			`modelName="` + h100.name + `"`, `Hostname="`, `job=""`, `owner=""`}
		for metric, want := range map[string]float64{
			"DCGM_FI_DEV_GPU_TEMP": h100.tempC, "DCGM_FI_DEV_POWER_USAGE": h100.powerW, "DCGM_FI_DEV_SM_CLOCK": float64(h100.smMHz),
			"DCGM_FI_DEV_MEM_CLOCK": float64(h100.memMHz), "DCGM_FI_DEV_GPU_UTIL": 0, "DCGM_FI_DEV_XID_ERRORS": 0,
			"DCGM_FI_DEV_FB_USED": 0, "DCGM_FI_DEV_FB_FREE": float64(h100.memTotal>>20 - 1024), // 1 GiB reserved
		} {
			if got, ok := metricLine(text, metric, labels...); !ok || got != want {
				t.Errorf("gpu %d: %s = %v (found %v), the profile states %v", i, metric, got, ok, want)
			}
		}
	}
	for i := range 8 { // the counter read, and the power drawn since (95 W)
		if got, ok := metricLine(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", fmt.Sprintf(`gpu="%d"`, i)); !ok || got < 600000 || got > 600000+95000*60 {
			t.Errorf("gpu %d: DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION = %v (found %v), the profile states 600000 and 95 W", i, got, ok)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", lastLines(text, 40))
	}
	metricstest.Promtool(t, text)

	// A reading changed by the library shows at the next scrape.
	mock.setOverrides(deviceOverrides(map[int]string{3: "{thermal: {temperature_gpu_c: 88}}"}))
	waitFor(t, 10*time.Second, "GPU 3 at 88 °C in the metrics", func() error {
		text, err := gpu1.scrapeMetrics(addr)
		if err != nil {
			return err
		}
		if v, ok := metricLine(text, "DCGM_FI_DEV_GPU_TEMP", `gpu="3"`); !ok || v != 88 {
			return fmt.Errorf("GPU 3 reads %v °C", v)
		}
		return nil
	})

	// A job's GPU carries its ID and owner.
	gpu2.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	gpu2.docker()
	gpu2.start("agent", "--name", "gpu2", "--iface", "eth0", "--listen", ":7420", "--metrics", addr)
	gpu2.waitDaemon()
	stdout, stderr, code := gpu2.cli("run", "--gpus", "1", "labpool-test/busybox:1", "sleep", "300")
	if code != 0 {
		t.Fatalf("labpool run: exit %d: %s%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	jobID := lines[len(lines)-1]
	self, err := gpu2.client().Self(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the job's labels on its GPU", func() error {
		text, err = gpu2.scrapeMetrics(addr)
		if err != nil {
			return err
		}
		if _, ok := metricLine(text, "DCGM_FI_DEV_GPU_UTIL", `job="`+jobID+`"`, `owner="`+self.ID+`"`); !ok {
			return fmt.Errorf("no GPU labelled job %s owner %s", jobID, self.ID)
		}
		return nil
	})
	held := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "DCGM_FI_DEV_GPU_UTIL{") && strings.Contains(l, `job="`+jobID+`"`) {
			held++
		}
	}
	if n := strings.Count(text, "DCGM_FI_DEV_GPU_UTIL{"); n != 2 || held != 1 {
		t.Errorf("%d GPUs, %d of them the job's; want 2 and 1:\n%s", n, held, text)
	}
	metricstest.Promtool(t, text)

	// The report counts the job's GPU time, and its energy by the counter
	// alone: the agent read the counters at its start, when the job got
	// its GPU and when it released it.
	if out, errOut, code := gpu2.cli("stop", jobID); code != 0 {
		t.Fatalf("labpool stop: exit %d: %s%s", code, out, errOut)
	}
	waitFor(t, 20*time.Second, "the job in the report, its energy counted", func() error {
		out, errOut, code := gpu2.cli("report", "--since", "1h", "--by", "job", "--json")
		if code != 0 {
			return fmt.Errorf("labpool report: exit %d: %s", code, errOut)
		}
		var rep app.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return err
		}
		for _, r := range rep.Rows {
			if r.Key == jobID && r.GPUHoursGranted > 0 && r.EnergyKWh > 0 && r.EnergySource == app.EnergyCounter {
				return nil
			}
		}
		return fmt.Errorf("rows %+v", rep.Rows)
	})
}
