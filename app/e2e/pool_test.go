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

// TestPool is the walking skeleton end to end: two agents and a viewer join
// by code, a stranger is refused, a killed agent goes offline within 3 s and
// comes back, and the viewer's history has no gap longer than the outages.
func TestPool(t *testing.T) {
	l := newLAN(t, "gpu1", "gpu2", "laptop", "stranger")
	gpu1, gpu2, laptop, stranger := l.host("gpu1"), l.host("gpu2"), l.host("laptop"), l.host("stranger")
	// The agents have no GPU here: each simulates two, through the same
	// sampler, replica and UI paths as NVML's figures.
	gpu1.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	gpu2.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	for _, h := range []*host{gpu1, gpu2, stranger} {
		h.agent()
	}
	const webAddr = "127.0.0.1:7421"
	laptop.start("web", "--listen", webAddr, "--name", "laptop", "--iface", "eth0", "--peer-listen", ":7420")
	for _, h := range l.hosts {
		h.waitDaemon()
	}

	out, errOut, code := gpu1.cli("pool", "create")
	if code != 0 {
		t.Fatalf("pool create: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	joinCode := strings.TrimSpace(lines[len(lines)-1])

	t.Run("join by mDNS", func(t *testing.T) {
		for _, h := range []*host{gpu2, laptop} {
			if out, errOut, code := h.cli("pool", "join", joinCode); code != 0 {
				t.Fatalf("%s: pool join: exit %d: %s%s", h.name, code, out, errOut)
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("wrong code refused", func(t *testing.T) {
		wrong := mutate(joinCode)
		_, errOut, code := stranger.cli("pool", "join", wrong, gpu1.ip+":7420")
		if code != 1 {
			t.Errorf("join with a wrong code: exit %d, want 1 (%s)", code, errOut)
		}
		if !strings.Contains(errOut, "refused") && !strings.Contains(errOut, "code") {
			t.Errorf("join with a wrong code: message %q does not say why", errOut)
		}
	})

	t.Run("stranger gets no node info", func(t *testing.T) {
		out, errOut, code := stranger.cli("debug", "probe", "--json", gpu1.ip+":7420")
		if code != 0 {
			t.Fatalf("probe: exit %d: %s", code, errOut)
		}
		var res app.ProbeResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("probe output %q: %v", out, err)
		}
		if res.Member || res.Status != 403 {
			t.Errorf("a stranger was served: %+v", res)
		}
	})

	t.Run("viewer lists every member live", func(t *testing.T) {
		waitFor(t, 20*time.Second, "3 live nodes on the laptop", func() error {
			return liveNodes(laptop, "gpu1", "gpu2", "laptop")
		})
		out, errOut, code := laptop.cli("nodes", "--json")
		if code != 0 {
			t.Fatalf("nodes --json: exit %d: %s", code, errOut)
		}
		var raw []map[string]any
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatalf("nodes --json: %v", err)
		}
		for _, n := range raw {
			for _, k := range []string{"id", "name", "online", "addresses", "last_seen", "gpus"} {
				if _, ok := n[k]; !ok {
					t.Errorf("nodes --json: object lacks %q: %v", k, n)
				}
			}
			if _, err := time.Parse(time.RFC3339, fmt.Sprint(n["last_seen"])); err != nil {
				t.Errorf("last_seen %v is not RFC 3339", n["last_seen"])
			}
		}
		if strings.Contains(out, "stranger") {
			t.Errorf("the stranger is listed: %s", out)
		}
		out, errOut, code = laptop.cli("gpus", "--json")
		if code != 0 {
			t.Fatalf("gpus --json: exit %d: %s", code, errOut)
		}
		var gpus []map[string]any
		if err := json.Unmarshal([]byte(out), &gpus); err != nil {
			t.Fatalf("gpus --json: %v", err)
		}
		if len(gpus) != 4 {
			t.Errorf("gpus --json lists %d GPUs, want 2 on each of gpu1 and gpu2", len(gpus))
		}
		for _, g := range gpus {
			for _, k := range []string{"node", "index", "uuid", "name", "util_percent", "mem_used_bytes", "mem_total_bytes", "temp_c", "power_w"} {
				if _, ok := g[k]; !ok {
					t.Errorf("gpus --json: object lacks %q: %v", k, g)
				}
			}
		}
	})

	t.Run("browser dashboard", func(t *testing.T) {
		browserTest(t, laptop, "gpu1", "gpu2")
	})

	t.Run("killed agent offline within 3 s and back", func(t *testing.T) {
		waitFor(t, 10*time.Second, "gpu2 online", func() error { return liveNodes(laptop, "gpu2") })
		killed := time.Now()
		gpu2.kill()
		var offlineAfter time.Duration
		waitFor(t, 10*time.Second, "gpu2 offline", func() error {
			n, err := nodeByName(laptop, "gpu2")
			if err != nil {
				return err
			}
			if n.Online {
				return fmt.Errorf("gpu2 still online")
			}
			offlineAfter = time.Since(killed)
			return nil
		})
		t.Logf("killed agent shown offline after %v", offlineAfter.Round(time.Millisecond))
		if offlineAfter > 3*time.Second {
			t.Errorf("killed agent shown offline after %v, want at most 3 s", offlineAfter)
		}
		n, _ := nodeByName(laptop, "gpu2")
		if n.Host == nil || n.LastSeen.IsZero() || !n.Stale {
			t.Errorf("offline node lost its last values: %+v", n)
		}
		time.Sleep(2 * time.Second)
		restarted := time.Now()
		gpu2.agent()
		waitFor(t, 15*time.Second, "gpu2 online again", func() error { return liveNodes(laptop, "gpu2") })
		t.Logf("restarted agent online again after %v", time.Since(restarted).Round(time.Millisecond))
		outage := time.Since(killed)
		time.Sleep(3 * time.Second)
		checkGaps(t, laptop, "gpu2", outage+time.Second)
	})

	t.Run("partitioned viewer catches up the history", func(t *testing.T) {
		l.ip("-n", laptop.ns, "link", "set", "eth0", "down")
		cut := time.Now()
		time.Sleep(6 * time.Second)
		l.ip("-n", laptop.ns, "link", "set", "eth0", "up")
		waitFor(t, 20*time.Second, "gpu1 and gpu2 online after the partition", func() error {
			return liveNodes(laptop, "gpu1", "gpu2")
		})
		t.Logf("reconnected %v after the link came back", time.Since(cut)-6*time.Second)
		time.Sleep(2 * time.Second)
		// gpu1 kept sampling during the partition: its own history fills the gap.
		checkGaps(t, laptop, "gpu1", 2500*time.Millisecond)
	})

	t.Run("viewer restarted offline shows the last known state", func(t *testing.T) {
		laptop.kill()
		l.ip("-n", laptop.ns, "link", "set", "eth0", "down")
		laptop.start("web", "--listen", webAddr, "--name", "laptop", "--iface", "eth0", "--peer-listen", ":7420")
		start := time.Now()
		laptop.waitDaemon()
		nodes, err := laptop.client().Nodes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("restarted viewer listed %d nodes from its replica %v after start", len(nodes), time.Since(start).Round(time.Millisecond))
		for _, name := range []string{"gpu1", "gpu2"} {
			n, err := find(nodes, name)
			if err != nil {
				t.Fatal(err)
			}
			if n.Online || !n.Stale || n.Host == nil || n.LastSeen.IsZero() {
				t.Errorf("%s offline should be stale with its last values: %+v", name, n)
			}
		}
		l.ip("-n", laptop.ns, "link", "set", "eth0", "up")
		waitFor(t, 20*time.Second, "reconnect by itself", func() error { return liveNodes(laptop, "gpu1", "gpu2") })
	})

	t.Run("browser members view", func(t *testing.T) {
		// As a plain member, the laptop's view offers no invite or removal;
		// made admin by the owner, it invites, changes gpu2's role, revokes
		// the invite and removes gpu2, through the real agents.
		membersTest(t, laptop, "members-member", "--as", "member")
		mustCLI(t, gpu1, "pool", "role", "laptop", "admin")
		waitFor(t, 10*time.Second, "the laptop sees itself admin", func() error {
			ps, err := laptop.client().Pool(context.Background())
			if err != nil || ps.SelfRole != "admin" {
				return fmt.Errorf("role %q: %v", ps.SelfRole, err)
			}
			return nil
		})
		membersTest(t, laptop, "members-admin", "--as", "admin", "--member", "gpu2")
		waitFor(t, 5*time.Second, "gpu2 removed on gpu1", func() error {
			ps, err := gpu1.client().Pool(context.Background())
			if err != nil {
				return err
			}
			for _, m := range ps.Members {
				if m.Name == "gpu2" && m.Removed {
					return nil
				}
			}
			return fmt.Errorf("gpu2 not removed: %+v", ps.Members)
		})
	})
}

// membersTest runs e2e/members.mjs against h's `labpool web`, saving its
// screenshots under the artifacts in a folder named shots.
func membersTest(t *testing.T, h *host, shots string, args ...string) {
	t.Helper()
	script := filepath.Join(repoRoot(), "frontend", "e2e", "members.mjs")
	dir := filepath.Join(artifacts(t), shots)
	full := append([]string{"netns", "exec", h.ns, "node", script, "--url", h.webURL(), "--shots", dir}, args...)
	cmd := exec.Command("ip", full...)
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	t.Logf("playwright: %s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("members view test: %v", err)
	}
}

// liveNodes checks that every named node is online with a fresh sample.
func liveNodes(h *host, names ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	nodes, err := h.client().Nodes(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		n, err := find(nodes, name)
		if err != nil {
			return err
		}
		if !n.Online || n.Host == nil || time.Since(n.LastSeen) > 3*time.Second {
			return fmt.Errorf("%s: online %v, last seen %v", name, n.Online, n.LastSeen)
		}
	}
	return nil
}

func nodeByName(h *host, name string) (app.Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	nodes, err := h.client().Nodes(ctx)
	if err != nil {
		return app.Node{}, err
	}
	return find(nodes, name)
}

func find(nodes []app.Node, name string) (app.Node, error) {
	for _, n := range nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return app.Node{}, fmt.Errorf("no node %s among %d", name, len(nodes))
}

// checkGaps fails when the viewer's last 5 minutes of a node's history have
// a hole longer than max.
func checkGaps(t *testing.T, h *host, name string, max time.Duration) {
	t.Helper()
	checkGapsSince(t, h, name, time.Time{}, max)
}

// checkGapsSince is checkGaps for the samples taken since since.
func checkGapsSince(t *testing.T, h *host, name string, since time.Time, max time.Duration) {
	t.Helper()
	n, err := nodeByName(h, name)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := h.client().History(context.Background(), n.ID, 300)
	if err != nil {
		t.Fatal(err)
	}
	samples := hist.Samples[:0:0]
	for _, s := range hist.Samples {
		if !s.Time.Before(since) {
			samples = append(samples, s)
		}
	}
	hist.Samples = samples
	if len(hist.Samples) < 5 {
		t.Fatalf("%s: only %d samples in the viewer's history", name, len(hist.Samples))
	}
	var worst time.Duration
	for i := 1; i < len(hist.Samples); i++ {
		worst = max2(worst, hist.Samples[i].Time.Sub(hist.Samples[i-1].Time))
	}
	t.Logf("%s: %d samples in the viewer's history, longest gap %v", name, len(hist.Samples), worst)
	if worst > max {
		t.Errorf("%s: gap of %v in the viewer's history, want at most %v", name, worst, max)
	}
}

func max2(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// mutate changes one character of a join code's secret part.
func mutate(code string) string {
	b := []byte(code)
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] >= 'A' && b[i] <= 'Z' && b[i] != 'B' {
			b[i] = 'B'
			return string(b)
		}
		if b[i] >= '2' && b[i] <= '7' && b[i] != '3' {
			b[i] = '3'
			return string(b)
		}
	}
	return code + "X"
}

// browserTest drives the dashboard with Playwright in the viewer's
// namespace, opening the URL its `labpool web` printed.
func browserTest(t *testing.T, h *host, names ...string) {
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	script := filepath.Join(repoRoot(), "frontend", "e2e", "dashboard.mjs")
	shot := filepath.Join(artifacts(t), "dashboard.png")
	cmd := exec.Command("ip", "netns", "exec", h.ns, "node", script,
		"--url", h.webURL(), "--names", strings.Join(names, ","), "--screenshot", shot)
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	t.Logf("playwright: %s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("browser test: %v", err)
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// artifacts is where tests leave screenshots for people to look at.
func artifacts(t *testing.T) string {
	dir := os.Getenv("LABPOOL_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(repoRoot(), "build", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
