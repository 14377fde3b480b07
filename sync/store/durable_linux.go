package store

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// allocate gives f size bytes of disk blocks (fallocate: no data written),
// writing zeros where the file system cannot.
func allocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return writeZeros(f, size)
	}
	return err
}

// freeBytes is the space an unprivileged writer has left on the file system
// of the file at path.
func freeBytes(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
