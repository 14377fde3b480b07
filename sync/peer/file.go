package peer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeNew writes data to path atomically (temp file, fsync, link) and only
// if path does not exist yet; otherwise it returns an error matching
// fs.ErrExist and leaves path as it was.
//
// The temporary file stays open and flock'd until it is removed, so that
// removeStaleTemps tells one a live writer holds from one a killed writer
// left.
func writeNew(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := createLockedTemp(dir, tempPattern(filepath.Base(path)))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer tmp.Close()           // unlocks, after the removal below
	defer os.Remove(tmp.Name()) // deferred calls run last in, first out
	if err := fill(tmp, data, perm); err != nil {
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

func fill(f *os.File, data []byte, perm fs.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	return f.Sync()
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

// SecureDir makes the data directory dir and the regular files directly in
// it its owner's alone, taking group and other permissions away (0755
// becomes 0700, 0644 becomes 0600): a directory made by an older labpool,
// by hand or under a loose umask is tightened at start. Symbolic links are
// left as they are. It returns one line per change, for the log.
func SecureDir(dir string) ([]string, error) {
	var fixed []string
	tighten := func(path string, mode fs.FileMode) error {
		if mode.Perm()&0o077 == 0 {
			return nil
		}
		tight := mode.Perm() &^ 0o077
		if err := os.Chmod(path, tight); err != nil {
			return fmt.Errorf("tighten %s: %w", path, err)
		}
		fixed = append(fixed, fmt.Sprintf("%s was %04o, now %04o", path, mode.Perm(), tight))
		return nil
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("tighten data directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("tighten data directory: %s is not a directory", dir)
	}
	if err := tighten(dir, info.Mode()); err != nil {
		return fixed, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fixed, fmt.Errorf("tighten data directory: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		} else if err != nil {
			return fixed, fmt.Errorf("tighten data directory: %w", err)
		}
		if err := tighten(filepath.Join(dir, e.Name()), info.Mode()); err != nil {
			return fixed, err
		}
	}
	return fixed, nil
}
