//go:build linux

package slurmtest

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// mungeSocket is munged's socket in dir, what AuthInfo names.
func mungeSocket(dir string) string { return filepath.Join(dir, "munge.socket.2") }

// startMunge runs munged as the munge user on its own key and socket in
// dir. munged insists that the socket's directory is the munge user's and
// traversable by clients (0711), and that its key is the munge user's and
// readable by it alone.
func startMunge(dir string) error {
	u, err := user.Lookup("munge")
	if err != nil {
		return fmt.Errorf("look up the munge user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Mkdir(dir, 0o711); err != nil {
		return err
	}
	key := filepath.Join(dir, "munge.key")
	if err := os.WriteFile(key, []byte(rand.Text()+rand.Text()+rand.Text()), 0o400); err != nil {
		return err
	}
	for _, p := range []string{dir, key} {
		if err := os.Chown(p, uid, gid); err != nil {
			return err
		}
	}
	if err := os.Chmod(dir, 0o711); err != nil { // past the umask
		return err
	}
	out, err := exec.Command("runuser", "-u", "munge", "--", "munged",
		"--socket="+mungeSocket(dir), "--key-file="+key,
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--log-file="+filepath.Join(dir, "munged.log"),
		"--seed-file="+filepath.Join(dir, "munged.seed")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("start munged: %v: %s", err, strings.TrimSpace(string(out)))
	}
	for range 100 {
		if _, err := os.Stat(mungeSocket(dir)); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("munged made no socket in 2s")
}

// openPath lets the munge user (munged) and Slurm's daemons reach dir:
// t.TempDir() and its parent are made 0700; 0711 lets others traverse
// them without listing or writing, which munged accepts.
func openPath(dir string) error {
	for _, p := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(p, 0o711); err != nil {
			return fmt.Errorf("slurmtest: open %s to the munge user: %w", p, err)
		}
	}
	return nil
}
