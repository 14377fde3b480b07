//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/containers/dockertest"
)

// TestIncidentsUI: a laptop (no GPU) and gpu1 (8 GPUs on NVIDIA's mock
// NVML) in one pool. A job of the laptop's, "train-idle", holds five of
// gpu1's GPUs idle, and another GPU of gpu1 runs hot and throttled (its
// temperature, throttle and health rules all fire, shortened through the
// CLI). Against the agents: exactly two active alerts, one per incident,
// the hot GPU's folding its other rules, the idle job's listing its five
// GPUs and naming the job and its owner. In Chromium against `labpool web`:
// the GPU machine's card first and full, the laptop's after and compact;
// the Launch dialog at 1 GPU; the alerts view with the two incidents; the
// report of the last hour by job with its unmeasured column. Screenshots
// in artifacts/incidents-ui.
func TestIncidentsUI(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	m := gpu1.useMockNVML("h100.yaml")
	gpu1.docker()
	gpu1.agent()
	url := laptop.web("127.0.0.1:7431")
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
	// Every GPU idle, cool and unthrottled before the job starts.
	idleAll := map[int]string{}
	for i := range 8 {
		idleAll[i] = "{utilization: {gpu: 0, memory: 0}, thermal: {temperature_gpu_c: 40}}"
	}
	m.setOverrides(deviceOverrides(idleAll))
	for _, rule := range [][]string{{"gpu-temp", "--threshold", "80", "--for", "3s"}, {"gpu-throttle", "--for", "3s"}, {"gpu-idle-allocation", "--for", "5s"}} {
		if out, errOut, code := laptop.cli(append([]string{"alerts", "set"}, rule...)...); code != 0 {
			t.Fatalf("alerts set %v: exit %d: %s%s", rule, code, out, errOut)
		}
	}
	out, errOut, code = laptop.cli("run", "--node", "gpu1", "--gpus", "5", "--name", "train-idle", dockertest.Image, "sleep", "600")
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
	hot := -1
	for i := range 8 {
		if !slices.Contains(j.GPUIndexes, i) {
			hot = i
		}
	}
	over := map[int]string{}
	for k, v := range idleAll {
		over[k] = v
	}
	over[hot] = "{utilization: {gpu: 97, memory: 60}, thermal: {temperature_gpu_c: 88}, clocks_throttle_reasons: {hw_thermal_slowdown: true, gpu_idle: false}}"
	m.setOverrides(deviceOverrides(over))

	var active []app.Alert
	waitFor(t, 60*time.Second, "the hot GPU's incident (temperature, throttle, health) and the idle job's", func() error {
		as, err := laptop.client().Alerts(context.Background(), 0)
		if err != nil {
			return err
		}
		active = active[:0]
		for _, a := range as {
			if a.Active() {
				active = append(active, a)
			}
		}
		for _, a := range active {
			if a.GPU != nil && *a.GPU == hot && a.Rule == "gpu-temp" && len(a.Folded) == 2 {
				for _, b := range active {
					if b.Job == jobID && len(b.GPUs) == 5 {
						return nil
					}
				}
			}
		}
		return fmt.Errorf("active alerts %+v", active)
	})
	if len(active) != 2 {
		t.Errorf("%d active alerts: %+v; want 2, one per incident", len(active), active)
	}
	for _, a := range active {
		t.Logf("alert %s (%s, folded %v, GPUs %v): %s", a.Rule, a.Severity, a.Folded, a.GPUs, a.Message)
		if a.Job == jobID && (!strings.Contains(a.Message, "job train-idle of laptop") || strings.Contains(a.Message, jobID)) {
			t.Errorf("idle alert message %q; want the job and its owner by name, not %s", a.Message, jobID)
		}
	}

	shots := filepath.Join(artifacts(t), "incidents-ui")
	res := incidentsBrowser(t, laptop, url, shots, hot)
	t.Logf("cards %v; launch GPUs %v; alerts %v; report %v; screenshots in %s", res["cards"], res["launchGPUs"], res["alerts"], res["report"], shots)

	var cards []struct {
		Name     string  `json:"name"`
		Compact  bool    `json:"compact"`
		Overflow bool    `json:"overflow"`
		NameCut  bool    `json:"nameCut"`
		Top      float64 `json:"top"`
		Height   float64 `json:"height"`
	}
	remarshal(t, res["cards"], &cards)
	if len(cards) != 2 || cards[0].Name != "gpu1" || cards[0].Compact || cards[1].Name != "laptop" || !cards[1].Compact {
		t.Errorf("cards %+v; want gpu1 first and full, the laptop after it and compact", cards)
	} else if cards[1].Height*2 > cards[0].Height {
		t.Errorf("the laptop's card is %v px high against gpu1's %v: not compact", cards[1].Height, cards[0].Height)
	}
	for _, c := range cards {
		if c.Overflow || c.NameCut {
			t.Errorf("card %s: content past its edge %v, name cut %v", c.Name, c.Overflow, c.NameCut)
		}
	}
	if res["launchGPUs"] != float64(1) {
		t.Errorf("the Launch dialog starts at %v GPUs; want 1", res["launchGPUs"])
	}
	var alerts []struct{ Rule, Rules, Text string }
	remarshal(t, res["alerts"], &alerts)
	if len(alerts) != 2 {
		t.Errorf("the alerts view lists %d active alerts: %+v; want 2", len(alerts), alerts)
	}
	var rep struct {
		Header []string `json:"header"`
		Rows   []struct {
			Label      string  `json:"label"`
			Unmeasured *string `json:"unmeasured"`
		} `json:"rows"`
	}
	remarshal(t, res["report"], &rep)
	if !slices.Contains(rep.Header, "unmeasured") || len(rep.Rows) == 0 || rep.Rows[0].Unmeasured == nil {
		t.Errorf("report %+v; want an unmeasured column with a figure per row", rep)
	}
	if errs, _ := res["consoleErrors"].([]any); len(errs) > 0 {
		t.Errorf("console errors: %v", errs)
	}
}

func remarshal(t *testing.T, in, out any) {
	t.Helper()
	b, _ := json.Marshal(in)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// incidentsBrowser runs e2e/incidents_ui.mjs in h's namespace and returns its report.
func incidentsBrowser(t *testing.T, h *host, url, shots string, hot int) map[string]any {
	t.Helper()
	script := filepath.Join(repoRoot(), "frontend", "e2e", "incidents_ui.mjs")
	cmd := exec.Command("ip", "netns", "exec", h.ns, "node", script, "--url", url, "--gpu-node", "gpu1", "--plain-node", "laptop",
		"--job", "train-idle", "--hot-gpu", fmt.Sprint(hot), "--shots", shots, "--timeout", "60")
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	lines := strings.Split(text, "\n")
	var res map[string]any
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("playwright: %v: %s", jerr, text)
	}
	if err != nil {
		t.Fatalf("incidents UI walk failed at %v: %v (screenshots in %s)\n%s", res["stage"], res["error"], shots, text)
	}
	return res
}
