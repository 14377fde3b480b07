package peer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeNew writes data to path atomically (temp file, fsync, link) and only
// if path does not exist yet; otherwise it returns an error matching
// fs.ErrExist and leaves path as it was.
func writeNew(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := fillAndClose(tmp, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// A hard link, unlike rename, never replaces a file that a concurrent
	// LoadOrCreate wrote first.
	if err := os.Link(tmp.Name(), path); os.IsExist(err) {
		return fmt.Errorf("write %s: %w", path, fs.ErrExist)
	} else if err != nil {
		// No hard links on this file system: fall back to rename.
		if err := os.Rename(tmp.Name(), path); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return syncDir(dir)
}

func fillAndClose(f *os.File, data []byte, perm fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
