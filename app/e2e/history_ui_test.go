package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHistoryUI walks the history, alerts and report views in Chromium
// against `labpool web` on a laptop whose pool holds a machine of 8 GPUs on
// NVIDIA's mock NVML library: it opens the machine view, switches ranges,
// drags to zoom, sees an alert that a short rule set through the CLI fires,
// and opens the report. Screenshots of every view are left in
// artifacts/history-ui for people to look at.
func TestHistoryUI(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	m := gpu1.useMockNVML("h100.yaml")
	gpu1.agent()
	url := laptop.web("127.0.0.1:7421")
	gpu1.waitDaemon()
	laptop.waitDaemon()

	out, errOut, code := laptop.cli("pool", "create")
	if code != 0 {
		t.Fatalf("pool create: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if _, errOut, code := gpu1.cli("pool", "join", strings.TrimSpace(lines[len(lines)-1])); code != 0 {
		t.Fatalf("gpu1: pool join: exit %d: %s", code, errOut)
	}
	waitFor(t, 30*time.Second, "gpu1 live on the laptop", func() error { return liveNodes(laptop, "gpu1", "laptop") })

	// A short rule, as a person would set it: GPU temperature over 80 °C
	// for 3 s (the default is 85 °C for 2 min).
	if out, errOut, code := laptop.cli("alerts", "set", "gpu-temp", "--threshold", "80", "--for", "3s"); code != 0 {
		t.Fatalf("alerts set: exit %d: %s%s", code, out, errOut)
	}

	// Twenty seconds of changing load, so the 1 s charts have a shape.
	for i := range 10 {
		m.setOverrides(deviceOverrides(map[int]string{
			0: fmt.Sprintf("{utilization: {gpu: %d, memory: %d}, power: {current_draw_mw: %d}, memory: {used_bytes: %d, free_bytes: %d}}",
				20+i*8, 10+i*5, (150+i*40)*1000, (i+1)<<32, 80<<30-(i+1)<<32),
			1: fmt.Sprintf("{utilization: {gpu: %d, memory: 30}, thermal: {temperature_gpu_c: %d}}", 90-i*9, 40+i*3),
		}))
		time.Sleep(2 * time.Second)
	}
	// GPU 1 runs hot: the rule fires on gpu1 while the browser walks the views.
	m.setOverrides(deviceOverrides(map[int]string{
		0: "{utilization: {gpu: 64, memory: 40}}",
		1: "{utilization: {gpu: 97, memory: 60}, thermal: {temperature_gpu_c: 88}}",
	}))

	shots := filepath.Join(artifacts(t), "history-ui")
	res := historyBrowser(t, laptop, url, shots)
	t.Logf("machine view opened in %v ms; ranges %v; zoom %v", res["openMs"], res["ranges"], res["zoom"])
	t.Logf("alert seen: %v; report rows %v, CSV header %v; screenshots in %s", res["alert"], res["reportRows"], res["csv"], shots)

	ranges, _ := res["ranges"].(map[string]any)
	tierOf := func(r string) string {
		v, _ := ranges[r].(map[string]any)
		s, _ := v["tier"].(string)
		return s
	}
	if tierOf("1h") == tierOf("1y") || tierOf("1h") == "" {
		t.Errorf("1 h and 1 y read the same tier %q: the ranges do not pick tiers", tierOf("1h"))
	}
	if v, _ := ranges["24h"].(map[string]any); v["bands"] != true {
		t.Errorf("the 24 h chart (tier %v) draws no min/max bands", v["tier"])
	}
	if errs, _ := res["consoleErrors"].([]any); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
	if !strings.HasPrefix(fmt.Sprint(res["csv"]), "key,label,gpu_hours_granted") {
		t.Errorf("CSV header %q", res["csv"])
	}
	t.Logf("rule saved: %v; mute: %v (alert reads muted: %v)", res["ruleSaved"], res["muteNotice"], res["muted"])

	// The rule the page changed is gpu1's too, as gpu1 publishes it.
	waitFor(t, 10*time.Second, "gpu1's folder-disk-full rule at 95%", func() error {
		out, errOut, code := laptop.cli("alerts", "rules", "gpu1", "--json")
		if code != 0 {
			return fmt.Errorf("alerts rules gpu1: exit %d: %s", code, errOut)
		}
		var rules []struct {
			ID        string  `json:"id"`
			Threshold float64 `json:"threshold"`
		}
		if err := json.Unmarshal([]byte(out), &rules); err != nil {
			return fmt.Errorf("alerts rules --json: %v: %s", err, out)
		}
		for _, r := range rules {
			if r.ID == "folder-disk-full" && r.Threshold == 95 {
				return nil
			}
		}
		return fmt.Errorf("rules %+v", rules)
	})
}

// historyBrowser runs e2e/history_ui.mjs in h's namespace and returns its report.
func historyBrowser(t *testing.T, h *host, printed, shots string) map[string]any {
	t.Helper()
	script := filepath.Join(repoRoot(), "frontend", "e2e", "history_ui.mjs")
	cmd := exec.Command("ip", "netns", "exec", h.ns, "node", script, "--url", printed,
		"--node", "gpu1", "--gpu", "1", "--alert-rule", "gpu-temp", "--shots", shots, "--timeout", "60")
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	var res map[string]any
	lines := strings.Split(text, "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("playwright: %v: %s", jerr, text)
	}
	if err != nil {
		t.Fatalf("history UI walk failed at %v: %v (screenshots in %s)\n%s", res["stage"], res["error"], shots, text)
	}
	return res
}
