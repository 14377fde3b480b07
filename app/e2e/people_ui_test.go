//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFolderMembersUI sets who may use a folder in the Folders view of
// Chromium against `labpool web` on the laptop, then checks on the agents
// that the member ticked there lists the folder and another member cannot;
// a folder shared from the form for a member by name is that member's too.
// Screenshots are left in artifacts/folder-members.
func TestFolderMembersUI(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	l := newLAN(t, "laptop", "alice", "bob")
	laptop, alice, bob := l.host("laptop"), l.host("alice"), l.host("bob")
	alice.agent()
	bob.agent()
	laptop.web("127.0.0.1:7421")
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, laptop, alice, bob)
	waitFor(t, 20*time.Second, "alice and bob live on the laptop", func() error { return liveNodes(laptop, "alice", "bob") })

	base := t.TempDir()
	lab, results := filepath.Join(base, "lab"), filepath.Join(base, "results")
	for _, d := range []string{lab, results} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "readme.txt"), []byte("hello\n"), 0o644)
	}
	mustCLI(t, laptop, "share", "lab", lab)

	shots := filepath.Join(artifacts(t), "folder-members")
	script := filepath.Join(repoRoot(), "frontend", "e2e", "folder_members.mjs")
	cmd := exec.Command("ip", "netns", "exec", laptop.ns, "node", script, "--url", laptop.webURL(),
		"--folder", "lab", "--member", "alice", "--share-name", "results", "--share-path", results, "--shots", shots)
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	t.Logf("playwright: %s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("browser folder members test: %v (screenshots in %s)", err, shots)
	}
	if !strings.Contains(string(out), "writes as") {
		t.Errorf("the read-write share said nothing of the user jobs write as: %s", out)
	}
	for _, folder := range []string{"laptop:lab", "laptop:results"} {
		waitFor(t, 20*time.Second, "alice lists "+folder, func() error {
			out, errOut, code := alice.cli("ls", folder)
			if code != 0 || !strings.Contains(out, "readme.txt") {
				return fmt.Errorf("exit %d %s%s", code, out, errOut)
			}
			return nil
		})
		if out, errOut, code := bob.cli("ls", folder); code == 0 || strings.Contains(out, "readme.txt") {
			t.Errorf("bob listed %s, shared for alice in the window: exit %d %s%s", folder, code, out, errOut)
		}
	}
}
