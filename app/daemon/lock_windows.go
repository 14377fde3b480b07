package daemon

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes f's exclusive lock without waiting (LockFileEx over the
// whole file: released when the process dies); busy says another process
// holds it.
func lockFile(f *os.File) (busy bool, err error) {
	var ol windows.Overlapped
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}
