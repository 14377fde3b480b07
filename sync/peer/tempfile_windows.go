package peer

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockTemp takes f's exclusive lock (LockFileEx over its first byte:
// released when its process dies), waiting for it when wait is set; busy
// says another holds it.
func lockTemp(f *os.File, wait bool) (busy bool, err error) {
	flags := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK)
	if !wait {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	var ol windows.Overlapped
	err = windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &ol)
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}

// openTemp opens path to read; removeStaleTemps has checked, from the
// directory's entry, that it is a regular file, and namesFile checks again
// once it is open.
func openTemp(path string) (*os.File, error) { return os.Open(path) }

// isLink says whether err is openTemp's refusal of a link: none on Windows.
func isLink(error) bool { return false }
