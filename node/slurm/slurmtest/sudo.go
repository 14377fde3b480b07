//go:build linux

package slurmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// InstallSudoers checks rule (one sudoers line) with visudo -cf and puts
// it in /etc/sudoers.d until the test's cleanup, for a test whose agent
// runs as an ordinary user (AsUser) and acts as a job account through
// sudo. It skips the test where sudo or visudo is missing (fails under
// CI=true).
func InstallSudoers(t testing.TB, rule string) {
	t.Helper()
	requireSlurm(t)
	for _, need := range []string{"sudo", "visudo"} {
		if _, err := exec.LookPath(need); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("slurmtest: %s needed under CI", need)
			}
			t.Skip("slurmtest: needs " + need)
		}
	}
	tmp := filepath.Join(t.TempDir(), "labpool")
	if err := os.WriteFile(tmp, []byte(rule+"\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("visudo", "-cf", tmp).CombinedOutput(); err != nil {
		t.Fatalf("slurmtest: visudo -cf of %q: %v: %s", rule, err, out)
	}
	dst := fmt.Sprintf("/etc/sudoers.d/labpool-test-%d-%d", os.Getpid(), userSeq.Add(1))
	if err := os.WriteFile(dst, []byte(rule+"\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dst) })
	if out, err := exec.Command("visudo", "-c").CombinedOutput(); err != nil {
		t.Fatalf("slurmtest: visudo -c with %s: %v: %s", dst, err, out)
	}
}

// AsUser is the command line that runs a program as the Unix user name
// (run it as root): setpriv, as a service manager starts a daemon.
func AsUser(t testing.TB, name string) []string {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"setpriv", "--reuid=" + u.Uid, "--regid=" + u.Gid, "--init-groups", "--"}
}

// Runnable copies the program at path into a directory any user may
// traverse and returns the copy's path, mode 0755: a test binary or
// labpool, run by a test's ordinary users.
func Runnable(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// OwnedDir makes a directory of the Unix user name, mode 0700, whose
// parents others may traverse (an agent's data directory, run as name).
func OwnedDir(t testing.TB, name string) string {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	if err := openPath(base); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}
