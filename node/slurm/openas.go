//go:build linux

package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ServeOpenOutput is OpenOutputVerb: run as a job's account (sudo -u),
// it opens the one path of args as openOutput does (no symbolic link, no
// FIFO wait, a regular file owned by the user it runs as) and sends the
// open file over its standard output, a Unix socket of the agent
// (SCM_RIGHTS). It reads nothing of the file: the agent reads it, as a
// file the account could open, and follows it as it grows. It returns
// the exit status.
func ServeOpenOutput(args []string, stdout, stderr *os.File) int {
	if len(args) != 1 || !strings.HasPrefix(args[0], "/") {
		fmt.Fprintf(stderr, "usage: labpool %s /path/of/the/output\n", OpenOutputVerb)
		return openRefused
	}
	u, err := user.Current()
	if err != nil {
		fmt.Fprintf(stderr, "open a job's output: who am I: %v\n", err)
		return openRefused
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	f, err := openOutput(args[0], account{Name: u.Username, UID: uint32(uid)})
	if errors.Is(err, os.ErrNotExist) {
		return openNotExist
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return openRefused
	}
	defer f.Close()
	if err := unix.Sendmsg(int(stdout.Fd()), []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		fmt.Fprintf(stderr, "send the output %s to the agent (is standard output its socket?): %v\n", args[0], err)
		return openRefused
	}
	return openSent
}

// OpenAs opens a job's output as its account, user: as root directly
// (openOutput); otherwise through Opener run by sudo -n as the account,
// which hands the open file back, so the agent reads only what the
// account itself could open, and needs no access to the account's home.
// The caller checks the file again (checkOutput).
func (r *CmdRunner) OpenAs(ctx context.Context, user, path string) (*os.File, error) {
	if r.switchMode() == SwitchSetpriv {
		a, err := lookupAccount(user, nil)
		if err != nil {
			return nil, err
		}
		return openOutput(path, a)
	}
	if !validUserName(user) {
		return nil, fmt.Errorf("open %s as %q: not a Unix user name", path, user)
	}
	if len(r.Opener) == 0 {
		return nil, fmt.Errorf("open %s as %s: no command opens a job's output as its account (CmdRunner.Opener: labpool %s)", path, user, OpenOutputVerb)
	}
	return r.openThrough(ctx, user, path)
}

// openThrough runs Opener as user with one end of a socket pair as its
// standard output, and receives the file it sends.
func (r *CmdRunner) openThrough(ctx context.Context, user, path string) (*os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s as %s: socket pair: %w", path, user, err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "opener"), os.NewFile(uintptr(fds[1]), "opener-peer")
	defer ours.Close()
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := append(append(append([]string(nil), r.Wrap...), "sudo", "-n", "-u", user, "--"), r.Opener...)
	argv = append(argv, path)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdout = theirs
	var stderr strings.Builder
	cmd.Stderr = &stderr
	// A session of its own: sudo has no terminal, so it runs the opener
	// without a pseudo-terminal (use_pty) and its standard output stays
	// the socket.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Run()
	theirs.Close()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == openNotExist:
		return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
	case err != nil:
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("open %s as %s: %w (after %s): %s", path, user, ctx.Err(), timeout, msg)
		}
		return nil, fmt.Errorf("open %s as %s: %v: %s", path, user, err, msg)
	}
	return receiveFile(ours, path)
}

// receiveFile takes the one file a peer sent over sock; any other (more
// files, none, a truncated message) is closed and refused.
func receiveFile(sock *os.File, path string) (*os.File, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("open %s: receive it from the opener: %w", path, err)
	}
	var got []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if fds, err := unix.ParseUnixRights(&m); err == nil {
				got = append(got, fds...)
			}
		}
	}
	if n != 1 || len(got) != 1 || flags&unix.MSG_CTRUNC != 0 {
		for _, fd := range got {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("open %s: the opener sent %d files, want 1", path, len(got))
	}
	return os.NewFile(uintptr(got[0]), path), nil
}
