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

// TestPeople: what people read and the verbs that must not surprise them,
// against real agents and a real dockerd. rm refuses a running job unless
// --force; a job queued behind another names that job and its owner by
// member name; a folder shared to a member by name is that member's only.
func TestPeople(t *testing.T) {
	l := newLAN(t, "gpu1", "alice", "bob")
	gpu1, alice, bob := l.host("gpu1"), l.host("alice"), l.host("bob")
	gpu1.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	dk := gpu1.docker()
	gpu1.agent()
	bob.agent()
	// alice's machine serves the UI too (the browser subtest).
	alice.start("web", "--listen", "127.0.0.1:7421", "--name", "alice", "--iface", "eth0", "--peer-listen", ":7420")
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, alice, bob)
	for _, h := range []*host{alice, bob} {
		waitFor(t, 20*time.Second, "gpu1 live on "+h.name, func() error { return liveNodes(h, "gpu1") })
	}
	const img = "labpool-test/busybox:1"
	run := func(h *host, args ...string) app.Job {
		t.Helper()
		out := mustCLI(t, h, append([]string{"run", "--json"}, args...)...)
		var j app.Job
		if err := json.Unmarshal([]byte(out), &j); err != nil || j.ID == "" {
			t.Fatalf("run --json: %v: %s", err, out)
		}
		return j
	}
	waitJob := func(h *host, id, state string) app.Job {
		t.Helper()
		var j app.Job
		waitFor(t, 30*time.Second, "job "+id+" "+state, func() error {
			var err error
			if j, err = h.client().Job(context.Background(), id); err != nil {
				return err
			}
			if string(j.State) != state {
				return fmt.Errorf("state %s (%s)", j.State, j.Error)
			}
			return nil
		})
		return j
	}

	t.Run("rm refuses a running job unless --force", func(t *testing.T) {
		j := run(alice, "--gpus", "1", "--name", "keep-me", img, "sleep", "600")
		waitJob(alice, j.ID, "running")
		_, errOut, code := alice.cli("rm", "keep-me")
		if code == 0 || !strings.Contains(errOut, "running") || !strings.Contains(errOut, "--force") {
			t.Fatalf("rm of a running job: exit %d %q; want a refusal naming the rule and --force", code, errOut)
		}
		if got := waitJob(alice, j.ID, "running"); got.Removed {
			t.Fatalf("a refused rm removed the job: %+v", got.Job)
		}
		out := mustCLI(t, alice, "rm", "--force", "--json", "keep-me")
		var rm struct {
			ID     string `json:"id"`
			Forced bool   `json:"forced"`
		}
		if err := json.Unmarshal([]byte(out), &rm); err != nil || rm.ID != j.ID || !rm.Forced {
			t.Errorf("rm --force --json: %v %s", err, out)
		}
		waitFor(t, 20*time.Second, "the forced job gone from ps --all", func() error {
			if out := mustCLI(t, alice, "ps", "--all", "--json"); strings.Contains(out, j.ID) {
				return fmt.Errorf("still listed")
			}
			return nil
		})
	})

	t.Run("browser: remove of a running job says its work is lost", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			skipOrFail(t, "browser test needs node")
		}
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			skipOrFail(t, "browser test needs Debian's chromium")
		}
		j := run(alice, "--gpus", "1", "--name", "in-browser", img, "sleep", "600")
		waitJob(alice, j.ID, "running")
		shots := filepath.Join(artifacts(t), "people")
		script := filepath.Join(repoRoot(), "frontend", "e2e", "remove_running.mjs")
		cmd := exec.Command("ip", "netns", "exec", alice.ns, "node", script, "--url", alice.webURL(), "--job", j.ID, "--shots", shots)
		cmd.Dir = filepath.Join(repoRoot(), "frontend")
		out, err := cmd.CombinedOutput()
		t.Logf("playwright: %s", strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("browser remove test: %v (screenshots in %s)", err, shots)
		}
		waitFor(t, 20*time.Second, "the job removed from the window gone", func() error {
			if out := mustCLI(t, alice, "ps", "--all", "--json"); strings.Contains(out, j.ID) {
				return fmt.Errorf("still listed")
			}
			return nil
		})
	})

	t.Run("a queued job names the job and the member it waits for", func(t *testing.T) {
		hog := run(alice, "--gpus", "2", "--name", "hog", img, "sleep", "600")
		waitJob(alice, hog.ID, "running")
		defer alice.cli("rm", "--force", hog.ID)
		q := run(bob, "--gpus", "1", "--queue", "--name", "waiter", img, "true")
		defer bob.cli("rm", "--force", q.ID)
		j := waitJob(bob, q.ID, "queued")
		n, err := nodeByName(bob, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(j.Error, "job hog of alice") || strings.Contains(j.Error, n.ID) || strings.Contains(j.Error, hog.ID) {
			t.Errorf("queued message %q: want the job and its owner by name, no IDs", j.Error)
		}
		// The GPUs name their job from the next sample on: wait for it.
		waitFor(t, 15*time.Second, "gpus on bob to name the job and owner", func() error {
			out := mustCLI(t, bob, "gpus")
			if !strings.Contains(out, "hog (alice)") || strings.Contains(out, hog.ID[:12]) {
				return fmt.Errorf("gpus on bob:\n%s", out)
			}
			return nil
		})
	})

	t.Run("image load shows the transfer, then the engine's progress", func(t *testing.T) {
		// An image gpu1's engine does not have: its one layer must load.
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "weights.bin"), []byte(strings.Repeat("w", 4<<20)), 0o644)
		layer := filepath.Join(t.TempDir(), "layer.tar")
		tag := memberPrefix(t, alice) + "labpool-test/progress:1" // a member's own name
		archive := filepath.Join(t.TempDir(), "progress.tar")
		for _, c := range [][]string{
			{"tar", "-C", dir, "-cf", layer, "."},
			{"docker", "-H", dk, "import", layer, tag},
			{"docker", "-H", dk, "save", "-o", archive, tag},
			{"docker", "-H", dk, "rmi", tag},
		} {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %v %s", c, err, out)
			}
		}
		out, errOut, code := alice.cli("image", "load", "gpu1", archive)
		t.Logf("image load stderr:\n%s", errOut)
		if code != 0 || strings.TrimSpace(out) != "Loaded "+tag {
			t.Fatalf("image load: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		sending := strings.Index(errOut, "sending progress.tar")
		engine := strings.Index(errOut, "its engine is loading it")
		layerAt := strings.Index(errOut, "Loading layer")
		if sending < 0 || engine < sending || layerAt < engine {
			t.Errorf("image load's progress: sending at %d, the engine's turn at %d, a layer at %d; want them in that order", sending, engine, layerAt)
		}
	})

	t.Run("a folder shared by member name is that member's only", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "private")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("for alice\n"), 0o644)
		if _, errOut, code := gpu1.cli("share", "--members", "nobody-here", "private", dir); code == 0 || !strings.Contains(errOut, "alice") {
			t.Errorf("share to an unknown member: exit %d %q; want refused naming the members", code, errOut)
		}
		out := mustCLI(t, gpu1, "share", "--members", "alice", "--json", "private", dir)
		var f app.Folder
		n, err := nodeByName(gpu1, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &f); err != nil || len(f.Members) != 1 || f.Members[0] != n.ID || f.MemberNames[0] != "alice" {
			t.Fatalf("share --members alice --json: %v %s; want alice's full ID %s", err, out, n.ID)
		}
		waitFor(t, 20*time.Second, "alice lists gpu1:private", func() error {
			out, errOut, code := alice.cli("ls", "gpu1:private")
			if code != 0 || !strings.Contains(out, "notes.txt") {
				return fmt.Errorf("exit %d %s%s", code, out, errOut)
			}
			return nil
		})
		if out, errOut, code := bob.cli("ls", "gpu1:private"); code == 0 || strings.Contains(out, "notes.txt") {
			t.Errorf("bob, not a member of the share, listed it: exit %d %s%s", code, out, errOut)
		}
		waitFor(t, 20*time.Second, "bob sees who may use it", func() error {
			out := mustCLI(t, bob, "folders")
			if !strings.Contains(out, "gpu1:private") || !strings.Contains(out, "alice") {
				return fmt.Errorf("folders:\n%s", out)
			}
			return nil
		})
		// Handed over to bob by name, without PATH: bob in, alice out.
		if out := mustCLI(t, gpu1, "share", "private", "--members", "bob"); !strings.Contains(out, "for bob") {
			t.Errorf("share private --members bob: %s", out)
		}
		waitFor(t, 20*time.Second, "bob lists gpu1:private", func() error {
			out, errOut, code := bob.cli("ls", "gpu1:private")
			if code != 0 || !strings.Contains(out, "notes.txt") {
				return fmt.Errorf("exit %d %s%s", code, out, errOut)
			}
			return nil
		})
		if out, errOut, code := alice.cli("ls", "gpu1:private"); code == 0 || strings.Contains(out, "notes.txt") {
			t.Errorf("alice, no longer a member of the share, listed it: exit %d %s%s", code, out, errOut)
		}
	})
}
