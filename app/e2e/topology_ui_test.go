//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTopologyUI opens the machine view of an agent on the mock NVML
// library (H100 profile) in a real Chromium: its GPU matrix reads NV18
// between every pair, and each GPU's MIG mode reads "off". The screenshot
// is kept in $LABPOOL_SHOTS when set.
func TestTopologyUI(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	l := newLAN(t, "gpu1")
	gpu1 := l.host("gpu1")
	gpu1.useMockNVML("h100.yaml")
	url := gpu1.web("127.0.0.1:7421")
	gpu1.waitDaemon()

	shots := os.Getenv("LABPOOL_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	shot := filepath.Join(shots, "machine-topology.png")
	cmd := exec.Command("ip", "netns", "exec", gpu1.ns, "node", filepath.Join(repoRoot(), "frontend", "e2e", "topology_ui.mjs"),
		"--url", url, "--node", "gpu1", "--shot", shot, "--timeout", "60")
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	lines := strings.Split(text, "\n")
	var res struct {
		OK            bool              `json:"ok"`
		Stage         string            `json:"stage"`
		Error         string            `json:"error"`
		Cells         map[string]string `json:"cells"`
		MIG           map[string]string `json:"mig"`
		LinkTitle     string            `json:"linkTitle"`
		ConsoleErrors []string          `json:"consoleErrors"`
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("playwright: %v: %s", jerr, text)
	}
	if err != nil || !res.OK {
		t.Fatalf("topology UI failed at %s: %v %s (screenshot %s)\n%s", res.Stage, err, res.Error, shot, text)
	}
	t.Logf("screenshot: %s", shot)
	if len(res.Cells) != 64 {
		t.Errorf("%d cells; want 8x8", len(res.Cells))
	}
	for i := range 8 {
		for k := range 8 {
			want := "NV18"
			if i == k {
				want = "X"
			}
			if got := res.Cells[fmt.Sprintf("%d-%d", i, k)]; got != want {
				t.Errorf("cell %d-%d reads %q; want %q", i, k, got, want)
			}
		}
		if got := res.MIG[fmt.Sprint(i)]; got != "off" {
			t.Errorf("GPU %d MIG reads %q; want off", i, got)
		}
	}
	if !strings.Contains(res.LinkTitle, "18 NVLink links, PCIe SYS") {
		t.Errorf("GPU 0 to 4 says %q; want 18 links across SYS", res.LinkTitle)
	}
	if len(res.ConsoleErrors) > 0 {
		t.Errorf("console errors: %v", res.ConsoleErrors)
	}
}
