package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrRunning means another daemon already serves the data directory.
var ErrRunning = errors.New("another labpool daemon is running for this data directory")

// lockDir takes the data directory's exclusive lock, held until the
// returned file is closed (or the process dies).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "daemon.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if busy, err := lockFile(f); err != nil {
		f.Close()
		if busy {
			return nil, fmt.Errorf("%w (%s)", ErrRunning, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return f, nil
}
