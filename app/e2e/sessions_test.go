//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessions: the sessions between machines, where the network is least
// kind. Each agent's interface carries no multicast, so there is no mDNS at
// all: every agent keeps running and says once that discovery is off; B and
// C join through A by address, a command given right after a join finds its
// machine, and B reaches C although neither ever heard of the other except
// through A (each member relays the addresses the others published).
func TestSessions(t *testing.T) {
	l := newLAN(t, "a", "b", "c")
	a, b, c := l.host("a"), l.host("b"), l.host("c")
	for _, h := range l.hosts {
		l.ip("-n", h.ns, "link", "set", "eth0", "multicast", "off")
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	t.Run("no multicast: discovery off, said once", func(t *testing.T) {
		for _, h := range l.hosts {
			if n := strings.Count(h.logText(), "mdns discovery is off"); n != 1 {
				t.Errorf("%s: said %d times that discovery is off; want once", h.name, n)
			}
		}
	})
	share := filepath.Join(t.TempDir(), "share")
	if err := os.MkdirAll(share, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(share, "hello.txt"), []byte("hello from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	joinCode := lastLine(mustCLI(t, a, "pool", "create"))
	mustCLI(t, a, "share", "data", share)

	t.Run("cp right after join", func(t *testing.T) {
		for _, h := range []*host{b, c} {
			mustCLI(t, h, "pool", "join", joinCode, a.ip+":7420")
			dst := filepath.Join(t.TempDir(), h.name)
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			mustCLI(t, h, "cp", "a:data/hello.txt", dst+"/")
			if got, err := os.ReadFile(filepath.Join(dst, "hello.txt")); err != nil || string(got) != "hello from a\n" {
				t.Errorf("%s: copied %q, %v", h.name, got, err)
			}
		}
	})
	if t.Failed() {
		return
	}
	t.Run("joined by address, every member reaches every other", func(t *testing.T) {
		for _, h := range l.hosts {
			waitFor(t, 20*time.Second, h.name+" sees a, b and c live", func() error {
				return liveNodes(h, "a", "b", "c")
			})
		}
	})
}

// TestSessionsRestart: a GPU machine's agent is killed (SIGKILL, no word to
// anyone) and restarted at once; as soon as the laptop sees it online
// again (or at once), `stop` of a job there works: the laptop's connection to the dead
// process meets the new one's stateless reset, and the stop (safe to
// repeat) is sent again on a new connection instead of failing.
func TestSessionsRestart(t *testing.T) {
	l := newLAN(t, "gpu1", "laptop")
	gpu1, laptop := l.host("gpu1"), l.host("laptop")
	gpu1.docker()
	gpu1.agent()
	laptop.agent()
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, laptop)
	waitFor(t, 20*time.Second, "gpu1 live on the laptop", func() error { return liveNodes(laptop, "gpu1") })
	const img = "labpool-test/busybox:1"
	for round := range 3 {
		id := lastLine(mustCLI(t, laptop, "run", "--node", "gpu1", "--name", fmt.Sprintf("restart%d", round), img, "sleep", "1000"))
		waitFor(t, 20*time.Second, "job "+id+" running", func() error {
			j, err := laptop.client().Job(context.Background(), id)
			if err == nil && j.State != "running" {
				err = fmt.Errorf("state %s (%s)", j.State, j.Error)
			}
			return err
		})
		gpu1.kill()
		gpu1.agent()
		gpu1.waitDaemon()
		// The first rounds stop at once, while the laptop's connection to
		// the killed process still looks alive; the last waits until the
		// laptop shows gpu1 online again, as a person would.
		if round == 2 {
			waitFor(t, 20*time.Second, "gpu1 online again", func() error { return liveNodes(laptop, "gpu1") })
		}
		if out, errOut, code := laptop.cli("stop", id); code != 0 {
			t.Fatalf("round %d: stop right after gpu1's restart: exit %d: %s%s", round, code, out, errOut)
		}
	}
}

// TestSessionsRemoved: a device removed from the pool is told, with the
// proof: its CLI says it was removed, by whom; it stops calling the pool's
// machines (its log shows no replication attempt afterwards, where it used
// to retry every two seconds against each machine). The laptop is removed
// while it runs (it hears of it on the members' streams); the desk while
// its agent is down, so that it learns it from the members' refusal, which
// carries the signed removal. Then the laptop joins another pool, c's.
func TestSessionsRemoved(t *testing.T) {
	l := newLAN(t, "a", "b", "laptop", "desk", "c")
	a, b, laptop, desk, c := l.host("a"), l.host("b"), l.host("laptop"), l.host("desk"), l.host("c")
	const webAddr = "127.0.0.1:7421"
	for _, h := range []*host{a, b, laptop, c} {
		h.agent()
	}
	desk.web(webAddr) // the window's daemon, in a browser
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, a, b, laptop, desk)
	otherCode := lastLine(mustCLI(t, c, "pool", "create"))
	for _, h := range []*host{laptop, desk} {
		waitFor(t, 20*time.Second, "a and b live on "+h.name, func() error { return liveNodes(h, "a", "b") })
	}
	selfID := func(h *host) string {
		ps, err := h.client().Pool(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ps.SelfID
	}
	deskID := selfID(desk)
	desk.kill()
	mustCLI(t, a, "pool", "remove", selfID(laptop))
	mustCLI(t, a, "pool", "remove", deskID)
	deskURL := desk.web(webAddr)
	desk.waitDaemon()

	for _, h := range []*host{laptop, desk} {
		t.Run(h.name+" told, by whom", func(t *testing.T) {
			waitFor(t, 20*time.Second, h.name+" told it was removed", func() error {
				out, errOut, code := h.cli("pool", "members")
				if code != 0 || !strings.Contains(out, "removed from the pool by a at ") {
					return fmt.Errorf("exit %d: %s%s", code, out, errOut)
				}
				return nil
			})
			ps, err := h.client().Pool(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ps.Removed == nil || ps.Removed.ByName != "a" || ps.Removed.At.IsZero() {
				t.Errorf("pool status: removed %+v; want by a, with its time", ps.Removed)
			}
		})
	}
	t.Run("the window says so", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			skipOrFail(t, "browser test needs node")
		}
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			skipOrFail(t, "browser test needs Debian's chromium")
		}
		script := filepath.Join(repoRoot(), "frontend", "e2e", "removed.mjs")
		cmd := exec.Command("ip", "netns", "exec", desk.ns, "node", script, "--url", deskURL, "--by", "a",
			"--shot", filepath.Join(artifacts(t), "removed.png"))
		cmd.Dir = filepath.Join(repoRoot(), "frontend")
		out, err := cmd.CombinedOutput()
		t.Logf("playwright: %s", strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("browser test: %v", err)
		}
	})
	t.Run("stops calling the pool's machines", func(t *testing.T) {
		// Every replication attempt of a device ends in one of these
		// lines (agents log at debug level here). Once told, none is
		// made: the counts stay put for 5 s, where a device still calling
		// makes one against each machine every 2 s at most.
		const attempt = `msg="replication session ended"`
		for _, h := range []*host{laptop, desk} {
			waitFor(t, 10*time.Second, h.name+" follows nobody", func() error {
				if !strings.Contains(h.logText(), "this machine was removed from the pool") {
					return errors.New("not yet")
				}
				return nil
			})
		}
		before := []int{strings.Count(laptop.logText(), attempt), strings.Count(desk.logText(), attempt)}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			for i, h := range []*host{laptop, desk} {
				if n := strings.Count(h.logText(), attempt); n != before[i] {
					t.Fatalf("the removed %s still calls: %d replication attempts after it was told", h.name, n-before[i])
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, h := range []*host{a, b} {
			if strings.Contains(h.logText(), "source over its budget") {
				t.Errorf("%s refused a source over its budget: a removed device kept calling", h.name)
			}
		}
	})
	t.Run("joins another pool", func(t *testing.T) {
		mustCLI(t, laptop, "pool", "join", otherCode, c.ip+":7420")
		waitFor(t, 20*time.Second, "c live on the laptop", func() error { return liveNodes(laptop, "c") })
		ps, err := laptop.client().Pool(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ps.Removed != nil || ps.SelfRole != "member" || len(ps.Members) != 2 {
			t.Errorf("after joining c's pool: removed %+v, role %q, %d members; want a member of a pool of 2", ps.Removed, ps.SelfRole, len(ps.Members))
		}
		if out := mustCLI(t, laptop, "pool", "members"); strings.Contains(out, "removed from the pool") {
			t.Errorf("pool members still says removed:\n%s", out)
		}
	})
}
