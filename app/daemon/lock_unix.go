//go:build unix

package daemon

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes f's exclusive lock without waiting (flock: released when
// the process dies); busy says another process holds it.
func lockFile(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}
