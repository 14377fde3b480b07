//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history/histtest"
	"github.com/labpool/labpool/node/containers/dockertest"
	"github.com/labpool/labpool/sync/peer"
)

// hotGPU is the GPU of gpu1 the test heats (not one the job gets).
const hotGPU = 7

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
	dk := gpu1.docker()
	// Two days of synthetic history in gpu1's replica, under its own
	// identity, before it first starts: every range has a shape and the
	// minute and quarter-hour tiers draw their min/max bands.
	id, err := peer.LoadOrCreate(gpu1.data)
	if err != nil {
		t.Fatal(err)
	}
	if err := histtest.WriteFile(context.Background(), filepath.Join(gpu1.data, "replica.db"), histtest.Compact,
		histtest.Node{ID: id.ID.String(), GPUs: 8, Span: 48 * time.Hour, End: time.Now()}); err != nil {
		t.Fatal(err)
	}
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
	waitFor(t, 30*time.Second, "gpu1 live on the laptop, with its container engine", func() error {
		if err := liveNodes(laptop, "gpu1", "laptop"); err != nil {
			return err
		}
		if n, err := nodeByName(laptop, "gpu1"); err != nil || !n.Containers {
			return fmt.Errorf("gpu1 runs no containers yet (%v)", err)
		}
		return nil
	})

	// A job of the laptop holds three of gpu1's GPUs: the report has its
	// hours, and its container's PID, written into the mock's process list,
	// shows as the job's process.
	out, errOut, code = laptop.cli("run", "--node", "gpu1", "--gpus", "3", dockertest.Image, "sleep", "600")
	if code != 0 {
		t.Fatalf("labpool run: exit %d: %s%s", code, out, errOut)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	jobID := strings.TrimSpace(lines[len(lines)-1])
	var j app.Job
	waitFor(t, 30*time.Second, "job "+jobID+" running", func() error {
		var err error
		if j, err = laptop.client().Job(context.Background(), jobID); err == nil && j.State != "running" {
			err = fmt.Errorf("state %s (%s)", j.State, j.Error)
		}
		return err
	})
	pidOut, err := exec.Command("docker", "-H", dk, "inspect", "-f", "{{.State.Pid}}", j.Container).Output()
	if err != nil {
		t.Fatalf("docker inspect %s: %v", j.Container, err)
	}
	jobPID := strings.TrimSpace(string(pidOut))
	granted := map[int]bool{}
	for _, i := range j.GPUIndexes {
		granted[i] = true
	}
	if len(j.GPUIndexes) != 3 || granted[hotGPU] {
		t.Fatalf("job %s holds GPUs %v; the test wants three, not GPU %d", jobID, j.GPUIndexes, hotGPU)
	}
	busy, idle := j.GPUIndexes[0], j.GPUIndexes[1] // the third stays idle while granted
	outside := -1
	for i := range 8 {
		if i != hotGPU && !granted[i] {
			outside = i
			break
		}
	}

	// A short rule, as a person would set it: GPU temperature over 80 °C
	// for 3 s (the default is 85 °C for 2 min).
	if out, errOut, code := laptop.cli("alerts", "set", "gpu-temp", "--threshold", "80", "--for", "3s"); code != 0 {
		t.Fatalf("alerts set: exit %d: %s%s", code, out, errOut)
	}

	// Twenty seconds of changing load, so the 1 s charts have a shape.
	jobProc := fmt.Sprintf("processes: [{pid: %s, type: \"C\", name: \"python\", used_memory_mib: 30720}]", jobPID)
	for i := range 10 {
		m.setOverrides(deviceOverrides(map[int]string{
			busy: fmt.Sprintf("{utilization: {gpu: %d, memory: %d}, power: {current_draw_mw: %d}, memory: {used_bytes: %d, free_bytes: %d}, %s}",
				20+i*8, 10+i*5, (150+i*40)*1000, (i+1)<<32, 80<<30-(i+1)<<32, jobProc),
			idle:   fmt.Sprintf("{utilization: {gpu: %d, memory: 5}}", 40-i*4),
			hotGPU: fmt.Sprintf("{utilization: {gpu: %d, memory: 30}, thermal: {temperature_gpu_c: %d}}", 90-i*9, 40+i*3),
		}))
		time.Sleep(2 * time.Second)
	}
	// The hotGPU GPU runs at 88 °C (the rule fires on gpu1 while the browser
	// walks the views); another GPU has a process outside labpool; the idle
	// one of the job is throttled (health "warning", which the card and the
	// machine view show with the reason).
	m.setOverrides(deviceOverrides(map[int]string{
		busy:   "{utilization: {gpu: 64, memory: 40}, memory: {used_bytes: 32212254720, free_bytes: 53687091200}, " + jobProc + "}",
		hotGPU: "{utilization: {gpu: 97, memory: 60}, thermal: {temperature_gpu_c: 88}}",
		outside: "{utilization: {gpu: 35, memory: 20}, memory: {used_bytes: 21474836480, free_bytes: 64424509440}, " +
			`processes: [{pid: 4242, type: "C", name: "python", used_memory_mib: 20480}]}`,
		idle: "{clocks_throttle_reasons: {hw_thermal_slowdown: true, gpu_idle: false}}",
	}))
	waitFor(t, 20*time.Second, "the throttled GPU and both processes, seen on the laptop", func() error {
		gpus, err := laptop.client().GPUs(context.Background())
		if err != nil {
			return err
		}
		for _, g := range gpus {
			switch {
			case g.NodeName != "gpu1":
			case g.Index == idle && g.Health != "warning":
				return fmt.Errorf("GPU %d health %q", idle, g.Health)
			case g.Index == busy && (len(g.ProcessList) == 0 || g.ProcessList[0].Job != jobID):
				return fmt.Errorf("GPU %d processes %+v; want the job's", busy, g.ProcessList)
			case g.Index == outside && len(g.ProcessList) == 0:
				return fmt.Errorf("GPU %d has no process", outside)
			}
		}
		return nil
	})

	shots := filepath.Join(artifacts(t), "history-ui")
	res := historyBrowser(t, laptop, url, shots, busy, false)
	t.Logf("machine view: first series answer %v ms after the click, charts drawn after %v ms; ranges %v; zoom %v",
		res["seriesMs"], res["openMs"], res["ranges"], res["zoom"])
	t.Logf("card health %v; machine view of GPU %d: health %v, processes %q", res["cardHealth"], busy, res["health"], res["processes"])
	// People read jobs by name and their owners by member name (IDs stay in the JSON).
	if p := fmt.Sprint(res["processes"]); !strings.Contains(p, j.Name) || !strings.Contains(p, "laptop") {
		t.Errorf("the machine view lists GPU %d's processes as %q; want job %s of laptop", busy, p, j.Name)
	}
	t.Logf("history unreachable: %v", res["stale"])
	t.Logf("pool: %v", res["pool"])
	t.Logf("alert seen: %v; report rows %v (first %q), CSV header %v; screenshots in %s", res["alert"], res["reportRows"], res["reportFirst"], res["csv"], shots)

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

	// gpu1 goes away: its view still opens from the laptop's replica, marked offline.
	gpu1.kill()
	waitFor(t, 60*time.Second, "gpu1 offline on the laptop", func() error {
		n, err := nodeByName(laptop, "gpu1")
		if err == nil && n.Online {
			err = fmt.Errorf("still online")
		}
		return err
	})
	res = historyBrowser(t, laptop, url, shots, busy, true)
	t.Logf("offline machine view: charts after %v ms; %v", res["openMs"], res["offlineNote"])
}

// historyBrowser runs e2e/history_ui.mjs in h's namespace and returns its report.
func historyBrowser(t *testing.T, h *host, printed, shots string, gpu int, offline bool) map[string]any {
	t.Helper()
	script := filepath.Join(repoRoot(), "frontend", "e2e", "history_ui.mjs")
	args := []string{"netns", "exec", h.ns, "node", script, "--url", printed,
		"--node", "gpu1", "--gpu", fmt.Sprint(gpu), "--alert-rule", "gpu-temp", "--shots", shots, "--timeout", "60"}
	if offline {
		args = append(args, "--offline")
	}
	cmd := exec.Command("ip", args...)
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
