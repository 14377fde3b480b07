//go:build linux

package slurm

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// socketPair is the agent's end and the opener's end of a Unix socket.
func socketPair(t *testing.T) (ours, theirs *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs = os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	return ours, theirs
}

// TestServeOpenOutput: the opener verb sends a regular file of its own
// user, and sends nothing for a link (to a secret), a FIFO (it does not
// wait), a directory, another user's file, a missing file (exit 2) or a
// bad command line; a refusal names the rule.
func TestServeOpenOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "slurm-1.out")
	if err := os.WriteFile(out, []byte("output of the job\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "slurm-2.out")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "slurm-3.out")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "slurm-4.out")
	if err := os.WriteFile(other, []byte("another user's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, os.Getuid()+4242, -1); err != nil {
		other = "" // not root: no file of another user to make
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string // in stderr
	}{
		{"the job's output", []string{out}, openSent, ""},
		{"a link to a secret", []string{link}, openRefused, "rule: a job's output is its account's file"},
		{"a FIFO", []string{fifo}, openRefused, "rule: a job's output is its account's file"},
		{"a directory", []string{dir}, openRefused, "rule: a job's output is its account's file"},
		{"another user's file", []string{other}, openRefused, "rule: a job's output is its account's file"},
		{"no such file", []string{filepath.Join(dir, "slurm-5.out")}, openNotExist, ""},
		{"no path", nil, openRefused, "usage"},
		{"a relative path", []string{"slurm-1.out"}, openRefused, "usage"},
		{"two paths", []string{out, out}, openRefused, "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.args) == 1 && tt.args[0] == "" {
				t.Skip("needs root to make another user's file")
			}
			ours, theirs := socketPair(t)
			stderr, err := os.CreateTemp(t.TempDir(), "stderr")
			if err != nil {
				t.Fatal(err)
			}
			code := ServeOpenOutput(tt.args, theirs, stderr)
			msg, _ := os.ReadFile(stderr.Name())
			if code != tt.wantCode || !strings.Contains(string(msg), tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d, %q", code, msg, tt.wantCode, tt.wantErr)
			}
			f, err := receiveFile(ours, "PATH")
			if code != openSent {
				if err == nil {
					f.Close()
					t.Fatalf("a file was sent with exit %d", code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if b, _ := io.ReadAll(f); string(b) != "output of the job\n" {
				t.Errorf("read %q from the file sent", b)
			}
		})
	}
}

// TestReceiveFileHostile: what an opener that is not labpool's verb
// sends (the account may trace its process) is refused, and every file
// descriptor it sent is closed: several files, none; nothing sent at all
// is an error, not a wait.
func TestReceiveFileHostile(t *testing.T) {
	// The files sent are of a path of this test alone: counting the
	// descriptors open on it is not thrown off by other tests' files.
	sent := filepath.Join(t.TempDir(), "sent")
	if err := os.WriteFile(sent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) int {
		f, err := os.Open(sent)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return int(f.Fd())
	}
	tests := []struct {
		name  string
		fds   int
		bytes []byte
	}{
		{"two files", 2, []byte{0}},
		{"four files", 4, []byte{0}},
		{"no file", 0, []byte{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours, theirs := socketPair(t)
			var fds []int
			for range tt.fds {
				fds = append(fds, open(t))
			}
			var oob []byte
			if len(fds) > 0 {
				oob = unix.UnixRights(fds...)
			}
			if err := unix.Sendmsg(int(theirs.Fd()), tt.bytes, oob, nil, 0); err != nil {
				t.Fatal(err)
			}
			before := openFDs(t, sent)
			f, err := receiveFile(ours, "PATH")
			if err == nil {
				f.Close()
				t.Fatalf("accepted")
			}
			if after := openFDs(t, sent); after != before {
				t.Errorf("%d file descriptors open after the refusal, %d before", after, before)
			}
		})
	}
	ours, _ := socketPair(t)
	if _, err := receiveFile(ours, "PATH"); err == nil || !errors.Is(err, syscall.EAGAIN) {
		t.Errorf("nothing sent: %v, want EAGAIN", err)
	}
}

// openFDs counts this process's open file descriptors.
// openFDs counts this process's file descriptors open on path.
func openFDs(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}
