//go:build unix

package peer

import (
	"errors"
	"os"
	"syscall"
)

// lockTemp takes f's exclusive lock (flock: released when its process
// dies), waiting for it when wait is set; busy says another holds it.
func lockTemp(f *os.File, wait bool) (busy bool, err error) {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	err = syscall.Flock(int(f.Fd()), how)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

// openTemp opens path to read, never through a link put in the file's
// place (O_NOFOLLOW), nor blocking on a FIFO put there (O_NONBLOCK).
func openTemp(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

// isLink says whether err is openTemp's refusal of a link.
func isLink(err error) bool { return errors.Is(err, syscall.ELOOP) }
