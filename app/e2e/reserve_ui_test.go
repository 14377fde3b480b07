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
	"time"
)

// TestReserveUI opens, in a real Chromium, `labpool web` on a laptop wired
// to an agent with two simulated GPUs, one of them reserved by the agent's
// own user an hour ahead: the machine view's reservation strip shows that
// reservation with its label whole (a 3-hour block is 2% of the week), and
// the Launch dialog takes a share, a memory cap and a time
// limit, and its plan places them on the agent; both GPUs with no time
// limit do not fit (the plan names the reservation), for 30 minutes they do. The screenshots are kept in
// $LABPOOL_SHOTS when set (reservation-strip.png, machine-view.png,
// launch-share.png).
func TestReserveUI(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	gpu1.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	gpu1.docker()
	gpu1.agent()
	url := laptop.web("127.0.0.1:7421")
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, laptop)
	waitFor(t, 20*time.Second, "the agent live on the laptop", func() error { return liveNodes(laptop, "gpu1") })
	waitUnits(t, laptop, "gpu1", 2)
	from := time.Now().Add(time.Hour).Truncate(time.Minute)
	// gpu1's own user reserves: the laptop's member may not use it (a
	// member's own reservation lets that member's jobs in).
	mustCLI(t, gpu1, "reserve", "gpu1", "--gpu-ids", "1", "--from", from.Format(time.RFC3339), "--for", "3h")
	waitFor(t, 20*time.Second, "the laptop reads the reservation in gpu1's grants", func() error {
		n, err := nodeByName(laptop, "gpu1")
		if err != nil {
			return err
		}
		for _, g := range n.Alloc.Grants {
			if strings.HasPrefix(g.Holder.ID, "rsv-") {
				return nil
			}
		}
		return fmt.Errorf("gpu1's grants as the laptop reads them: %+v", n.Alloc.Grants)
	})
	rs, err := reservationsJSON(laptop)
	if err != nil || len(rs) != 1 {
		t.Fatalf("the laptop lists %+v (%v); want its reservation", rs, err)
	}

	shots := os.Getenv("LABPOOL_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	cmd := exec.Command("ip", "netns", "exec", laptop.ns, "node", filepath.Join(repoRoot(), "frontend", "e2e", "reserve_ui.mjs"),
		"--url", url, "--node", "gpu1", "--reservation", rs[0].ID, "--shots", shots, "--timeout", "60")
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(string(out))
	lines := strings.Split(text, "\n")
	type field struct {
		Visible bool   `json:"visible"`
		Value   string `json:"value"`
	}
	var res struct {
		OK    bool   `json:"ok"`
		Stage string `json:"stage"`
		Error string `json:"error"`
		Block struct {
			Text    string `json:"text"`
			Title   string `json:"title"`
			Clipped bool   `json:"clipped"`
		} `json:"block"`
		Plan          string            `json:"plan"`
		Reserved      string            `json:"reserved"`
		Before        string            `json:"before"`
		Fields        map[string]*field `json:"fields"`
		ConsoleErrors []string          `json:"consoleErrors"`
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
		t.Fatalf("playwright: %v: %s", jerr, text)
	}
	if err != nil || !res.OK {
		t.Fatalf("reservation UI failed at %s: %v %s (screenshots in %s)\n%s", res.Stage, err, res.Error, shots, text)
	}
	t.Logf("screenshots in %s; strip block %q (%q); plan %q", shots, res.Block.Text, res.Block.Title, res.Plan)
	if !strings.Contains(res.Block.Title, "GPU 1") && !strings.Contains(res.Block.Text, "1") {
		t.Errorf("the strip's block reads %q (%q); want GPU 1's reservation", res.Block.Text, res.Block.Title)
	}
	if res.Block.Clipped {
		t.Errorf("the strip's block %q is cut short: a person cannot read whose it is", res.Block.Text)
	}
	if !strings.Contains(res.Plan, "gpu1") {
		t.Errorf("the plan reads %q; want it on gpu1", res.Plan)
	}
	t.Logf("both GPUs, no time limit: %q; for 30 minutes: %q", res.Reserved, res.Before)
	if !strings.Contains(res.Reserved, "reserved for gpu1 from") || strings.Contains(res.Reserved, "Runs on") {
		t.Errorf("both GPUs with no time limit: the plan reads %q; want it not to fit, naming the reservation", res.Reserved)
	}
	if !strings.Contains(res.Before, "Runs on gpu1") {
		t.Errorf("both GPUs for 30 minutes: the plan reads %q; want it on gpu1", res.Before)
	}
	for _, k := range []string{"share", "mem", "mig", "time"} {
		if f := res.Fields[k]; f == nil || !f.Visible {
			t.Errorf("the Launch dialog's %s field: %+v; want it shown", k, f)
		}
	}
	if len(res.ConsoleErrors) > 0 {
		t.Errorf("console errors: %v", res.ConsoleErrors)
	}
}
