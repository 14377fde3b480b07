package peer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempPattern is the os.CreateTemp pattern of the temporary file that
// writeNew fills before linking it as name: ".key.pem.tmp123456".
func tempPattern(name string) string { return "." + name + ".tmp*" }

// isOurTemp reports whether name is a temporary file writeNew makes for
// one of the identity files: the pattern with a random decimal tail.
func isOurTemp(name string) bool {
	for _, f := range []string{KeyFile, CertFile} {
		prefix, _, _ := strings.Cut(tempPattern(f), "*")
		tail, ok := strings.CutPrefix(name, prefix)
		if ok && tail != "" && strings.Trim(tail, "0123456789") == "" {
			return true
		}
	}
	return false
}

// createLockedTemp creates a temporary file in dir and flocks it. Between
// the creation and the lock, removeStaleTemps may take the file for one a
// killed writer left and remove it; the name then no longer leads to the
// file, and another is made.
func createLockedTemp(dir, pattern string) (*os.File, error) {
	for range 8 {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		if _, err := lockTemp(f, true); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if named, err := namesFile(f.Name(), f); named {
			return f, nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.Close()
			return nil, err
		}
		f.Close()
	}
	return nil, fmt.Errorf("create a temporary file in %s: removed as stale 8 times", dir)
}

// namesFile reports whether path (not followed if a link) is the file f.
func namesFile(path string, f *os.File) (bool, error) {
	at, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	open, err := f.Stat()
	if err != nil {
		return false, err
	}
	return os.SameFile(at, open), nil
}

// removeStaleTemps removes the temporary files of identity files that a
// writer killed mid-write left in dir (each may hold a private key that no
// identity uses). Only regular files named as writeNew names them are
// touched, never a link or what it leads to, and only when no live writer
// holds the file's lock: a concurrent LoadOrCreate's file stays.
func removeStaleTemps(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("remove stale temporary files: %w", err)
	}
	for _, e := range entries {
		if !isOurTemp(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if err := removeIfStale(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove stale temporary files: %w", err)
		}
	}
	return nil
}

// removeIfStale removes the regular file path unless a live writer holds
// its lock. A file gone meanwhile is no error.
func removeIfStale(path string) error {
	f, err := openTemp(path)
	if errors.Is(err, fs.ErrNotExist) || isLink(err) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return err
	}
	busy, err := lockTemp(f, false)
	if busy {
		return nil // a live writer's
	} else if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	if named, err := namesFile(path, f); !named {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
