package slurm

import (
	"os"

	"golang.org/x/sys/unix"
)

// memFile is an anonymous in-memory file (memfd) for a command's output:
// the child writes it directly, and the agent reads it once the child
// has exited, with no pipe and no goroutine copying it (a third of the
// agent's cost of running a command that prints 45 kB:
// BenchmarkCmdRunner).
func memFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// waitExit returns once process pid has exited (or could not be watched),
// waiting in the runtime's poller on a pidfd: a wait blocked in waitid
// keeps the runtime's monitor polling for as long as the child runs,
// which costs the agent a quarter of a millisecond per squeue.
func waitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// The poller reports readiness once (edge-triggered): each call asks
	// the pidfd itself, so an exit before the wait began is not missed.
	_ = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, 0)
		return err != unix.EINTR && (err != nil || n > 0)
	})
}
