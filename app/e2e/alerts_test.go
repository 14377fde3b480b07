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
)

// TestAlerts runs an agent on NVIDIA's mock NVML library (H100 profile)
// and a real dockerd, with a laptop following it, rules shortened through
// the CLI: a member may not change rules, a machine away when they change
// catches up when it is back; an override raising a GPU's
// temperature fires the temperature alert on the machine after the rule's
// duration, the laptop sees it, mutes it, and sees it clear; a GPU granted
// to a job and held at 0% trips the idle-allocation alert; an
// uncorrectable ECC fault fires the health alert; the webhook gets the
// alerts as JSON; a job idle past the machine's reclaim policy shows its
// countdown, then is stopped saying why; a machine that stops is
// "offline" on the laptop.
func TestAlerts(t *testing.T) {
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	gpu1.docker()
	m := gpu1.useMockNVML("h100.yaml")
	gpu1.agent()
	laptop.agent()
	gpu1.waitDaemon()
	laptop.waitDaemon()
	joinAll(t, gpu1, laptop)
	waitFor(t, 20*time.Second, "gpu1 live on the laptop", func() error { return liveNodes(laptop, "gpu1") })

	// Rules: owners and admins only; set on every machine.
	_, errOut, code := laptop.cli("alerts", "set", "gpu-temp", "--for", "3s")
	if code == 0 || !strings.Contains(errOut, "alerts: owners and admins only") {
		t.Fatalf("a member sets a rule: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{
		{"gpu-temp", "--threshold", "85", "--for", "3s"},
		{"gpu-idle-allocation", "--threshold", "5", "--for", "4s"},
		{"machine-offline", "--for", "3s"},
	} {
		out, errOut, code := gpu1.cli(append([]string{"alerts", "set"}, args...)...)
		if code != 0 || !strings.Contains(out, "set on gpu1, laptop") || strings.Contains(out, "NOT on") {
			t.Fatalf("alerts set %v: exit %d: %s%s", args, code, out, errOut)
		}
	}
	waitFor(t, 20*time.Second, "gpu1's rules, as published, on the laptop", func() error {
		rules, err := callJSON[[]app.AlertRule](laptop, "alerts", "rules", "gpu1", "--json")
		if err == nil && (rules[0].ID != "gpu-temp" || rules[0].ForSeconds != 3) {
			err = fmt.Errorf("rules %+v", rules)
		}
		return err
	})

	// A machine away when a rule changes catches up when it is back.
	laptop.kill()
	out, errOut, code := gpu1.cli("alerts", "set", "gpu-throttle", "--for", "7m")
	if code != 0 || !strings.Contains(out, "set on gpu1") || !strings.Contains(out, "NOT on laptop") {
		t.Errorf("alerts set with the laptop away: exit %d: %s%s", code, out, errOut)
	}
	laptop.agent()
	laptop.waitDaemon()
	waitFor(t, 90*time.Second, "the laptop's rules caught up, as published", func() error {
		rules, err := callJSON[[]app.AlertRule](gpu1, "alerts", "rules", "laptop", "--json")
		for _, r := range rules {
			if r.ID == "gpu-throttle" && r.ForSeconds != 420 {
				return fmt.Errorf("laptop's gpu-throttle: %+v", r)
			}
		}
		return err
	})
	waitFor(t, 20*time.Second, "gpu1 live on the laptop again", func() error { return liveNodes(laptop, "gpu1") })

	if _, errOut, code := gpu1.cli("alerts", "webhook", "file:/etc/passwd"); code == 0 || !strings.Contains(errOut, "only http and https") {
		t.Errorf("alerts webhook file:/etc/passwd: exit %d: %s", code, errOut)
	}
	if _, errOut, code := laptop.cli("alerts", "webhook", "https://chat.example.org/hook"); code == 0 || !strings.Contains(errOut, "alerts: owners and admins only") {
		t.Errorf("a member sets the webhook: exit %d: %s", code, errOut)
	}
	hook := webhookSink(t, laptop)
	if hook != nil {
		// The sink is on the lab's (private) network: gpu1's own policy lets its posts reach it.
		if _, errOut, code := gpu1.cli("policy", "--webhook-private", "allow"); code != 0 {
			t.Fatalf("policy --webhook-private allow: exit %d: %s", code, errOut)
		}
		if out, errOut, code := gpu1.cli("alerts", "webhook", hook.url); code != 0 {
			t.Fatalf("alerts webhook: exit %d: %s%s", code, out, errOut)
		}
	}

	t.Run("temperature", func(t *testing.T) {
		raised := time.Now()
		m.setOverrides(deviceOverrides(map[int]string{2: `{thermal: {temperature_gpu_c: 92}}`}))
		a := waitAlert(t, laptop, "gpu-temp firing on GPU 2", func(a app.Alert) bool {
			return a.Rule == "gpu-temp" && a.GPU != nil && *a.GPU == 2 && a.Active()
		})
		if early := a.FiredAt.Sub(raised); early < 3*time.Second-100*time.Millisecond {
			t.Errorf("fired %v after the temperature rose; the rule says 3 s", early)
		}
		if a.Severity != "critical" || !strings.Contains(a.Message, "GPU 2 at 92 °C") || a.Value != 92 {
			t.Errorf("alert %+v", a)
		}
		text, _, _ := laptop.cli("alerts")
		if !strings.Contains(text, "firing") || !strings.Contains(text, "GPU 2 at 92 °C") || !strings.Contains(text, "gpu1") {
			t.Errorf("labpool alerts on the laptop:\n%s", text)
		}
		if out, errOut, code := laptop.cli("alerts", "mute", a.ID, "--for", "1h"); code != 0 || !strings.Contains(out, "muted gpu-temp on GPU 2") {
			t.Errorf("alerts mute: exit %d: %s%s", code, out, errOut)
		}
		waitAlert(t, laptop, "the alert muted", func(b app.Alert) bool { return b.ID == a.ID && b.Muted })
		m.setOverrides("")
		waitAlert(t, laptop, "gpu-temp cleared", func(b app.Alert) bool { return b.ID == a.ID && !b.Active() })
		if hook == nil {
			t.Log("no python3: the webhook's posts are not checked")
			return
		}
		hook.wait(t, "the temperature alert firing", func(p map[string]any) bool {
			return p["state"] == "firing" && strings.Contains(fmt.Sprint(p["text"]), "[critical] gpu-temp on gpu1: GPU 2 at 92 °C")
		})
	})

	t.Run("idle allocation", func(t *testing.T) {
		out, errOut, code := gpu1.cli("run", "--gpu-ids", "0", "--name", "idle", "labpool-test/busybox:1", "sleep", "1000")
		if code != 0 {
			t.Fatalf("run: exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		id := lines[len(lines)-1]
		a := waitAlert(t, laptop, "idle allocation of GPU 0", func(a app.Alert) bool {
			return a.Rule == "gpu-idle-allocation" && a.GPU != nil && *a.GPU == 0 && a.Active()
		})
		if a.Job != id || a.Severity != "warning" || !strings.Contains(a.Message, "idle allocation: job idle of gpu1 holds GPU 0,") ||
			strings.Contains(a.Message, id) {
			t.Errorf("alert %+v; want the job %s named by its name and its owner's (the ID in Job only)", a, id)
		}
		if _, errOut, code := gpu1.cli("stop", id); code != 0 {
			t.Fatalf("stop: %s", errOut)
		}
		waitAlert(t, laptop, "idle allocation cleared once the job ended", func(b app.Alert) bool { return b.ID == a.ID && !b.Active() })
	})

	t.Run("health", func(t *testing.T) {
		m.setOverrides(deviceOverrides(map[int]string{5: `{failure: {mode: ecc_uncorrectable, xid: {code: 79}}}`}))
		a := waitAlert(t, laptop, "gpu-health critical on GPU 5", func(a app.Alert) bool {
			return a.Rule == "gpu-health" && a.GPU != nil && *a.GPU == 5 && a.Active() && a.Severity == "critical"
		})
		if !strings.Contains(a.Message, "GPU 5 health is quarantined") {
			t.Errorf("alert %+v", a)
		}
	})

	t.Run("idle reclaim", func(t *testing.T) {
		if out, errOut, code := gpu1.cli("policy", "--idle-reclaim", "10s", "--idle-below", "5"); code != 0 || !strings.Contains(out, "under 5% for 10s") {
			t.Fatalf("policy --idle-reclaim: exit %d: %s%s", code, out, errOut)
		}
		out, errOut, code := gpu1.cli("run", "--gpu-ids", "1", "--name", "sleepy", "labpool-test/busybox:1", "sleep", "1000")
		if code != 0 {
			t.Fatalf("run: exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		id := lines[len(lines)-1]
		var countdown bool
		waitFor(t, 40*time.Second, "the idle job reclaimed", func() error {
			j, err := laptop.client().Job(context.Background(), id)
			if err != nil {
				return err
			}
			if j.ReclaimAt != nil && j.State == "running" {
				countdown = true
			}
			if j.State != "exited" {
				return fmt.Errorf("job %s, reclaim at %v", j.State, j.ReclaimAt)
			}
			if j.Error != "stopped: GPUs idle under 5% for 10s (idle reclaim policy)" {
				t.Errorf("the reclaimed job says %q", j.Error)
			}
			return nil
		})
		if !countdown {
			t.Errorf("the laptop never saw the job's countdown (reclaim_at) before it was stopped")
		}
		gpu1.cli("policy", "--idle-reclaim", "0")
	})

	t.Run("offline", func(t *testing.T) {
		gpu1.kill()
		a := waitAlertFor(t, 90*time.Second, laptop, "gpu1 offline, seen from the laptop", func(a app.Alert) bool {
			return a.Rule == "machine-offline" && a.Active()
		})
		if !strings.Contains(a.Message, "machine gpu1 offline") {
			t.Errorf("alert %+v", a)
		}
	})
}

// callJSON runs a labpool verb with --json on h and decodes its output.
func callJSON[T any](h *host, args ...string) (T, error) {
	var v T
	out, errOut, code := h.cli(args...)
	if code != 0 {
		return v, fmt.Errorf("labpool %v: exit %d: %s", args, code, errOut)
	}
	return v, json.Unmarshal([]byte(out), &v)
}

// waitAlert waits until h lists an alert cond accepts, and returns it.
func waitAlert(t *testing.T, h *host, what string, cond func(app.Alert) bool) app.Alert {
	t.Helper()
	return waitAlertFor(t, 30*time.Second, h, what, cond)
}

func waitAlertFor(t *testing.T, d time.Duration, h *host, what string, cond func(app.Alert) bool) app.Alert {
	t.Helper()
	var found app.Alert
	waitFor(t, d, what, func() error {
		as, err := h.client().Alerts(context.Background(), 0)
		if err != nil {
			return err
		}
		for _, a := range as {
			if cond(a) {
				found = a
				return nil
			}
		}
		return fmt.Errorf("alerts: %+v", as)
	})
	return found
}

// sink is a webhook receiver run in a host's namespace (python3's
// http.server): each POST body is written to a file of dir.
type sink struct {
	url, dir string
}

// webhookSink starts a receiver on h; nil without python3.
func webhookSink(t *testing.T, h *host) *sink {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		return nil
	}
	dir := t.TempDir()
	const script = `
import http.server, os, sys, itertools
n = itertools.count()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        with open(os.path.join(sys.argv[1], '%06d.json' % next(n)), 'wb') as f:
            f.write(body)
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(('0.0.0.0', 8099), H).serve_forever()
`
	cmd := exec.Command("ip", "netns", "exec", h.ns, "python3", "-c", script, dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &sink{url: "http://" + h.ip + ":8099/hook", dir: dir}
}

// wait waits until a payload cond accepts has arrived.
func (s *sink) wait(t *testing.T, what string, cond func(map[string]any) bool) {
	t.Helper()
	waitFor(t, 20*time.Second, "webhook: "+what, func() error {
		files, _ := filepath.Glob(filepath.Join(s.dir, "*.json"))
		var seen []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var p map[string]any
			if json.Unmarshal(b, &p) == nil && cond(p) {
				return nil
			}
			seen = append(seen, string(b))
		}
		return fmt.Errorf("payloads: %s", strings.Join(seen, "\n"))
	})
}
