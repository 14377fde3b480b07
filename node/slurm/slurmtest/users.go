//go:build linux

package slurmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// userSeq tells apart the users of one test process.
var userSeq atomic.Int32

// AddUser makes a Unix user for the test (useradd), with its own group
// and a home directory of its own under a directory others may traverse,
// and deletes both at the test's cleanup. It returns the user's name,
// unique to this process ("lpt<pid>u<n>"). Slurm's jobs run as it on
// every node of a test cluster: they share this machine's users and
// files.
func AddUser(t testing.TB) string {
	t.Helper()
	requireSlurm(t)
	name := fmt.Sprintf("lpt%du%d", os.Getpid(), userSeq.Add(1))
	base := t.TempDir()
	if err := openPath(base); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	if out, err := exec.Command("useradd", "--create-home", "--home-dir", home, "--shell", "/bin/sh",
		"--user-group", name).CombinedOutput(); err != nil {
		t.Fatalf("slurmtest: useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", "--force", name).CombinedOutput(); err != nil && !strings.Contains(string(out), "does not exist") {
			t.Logf("slurmtest: userdel %s: %v: %s", name, err, out)
		}
		os.RemoveAll(home)
	})
	return name
}
