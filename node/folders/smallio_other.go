//go:build !linux

package folders

import (
	"fmt"
	"io"
	"os"
	"path"

	"github.com/labpool/labpool/internal/openstat"
)

// DirRoots opens the directories under one root as roots of their own,
// each once, so that a small file is reached by its name alone rather than
// by a walk down its whole path at every step.
type DirRoots struct {
	root *os.Root
	open map[string]*os.Root
}

// NewDirRoots opens directories under root as they are needed; Close
// closes them.
func NewDirRoots(root *os.Root) *DirRoots {
	return &DirRoots{root: root, open: map[string]*os.Root{}}
}

// split returns the root of the directory of name (a clean path under the
// root) and name's last element.
func (d *DirRoots) split(name string) (*os.Root, string, error) {
	dir, base := path.Split(name)
	if dir == "" {
		return d.root, base, nil
	}
	if r := d.open[dir]; r != nil {
		return r, base, nil
	}
	r, err := d.root.OpenRoot(path.Clean(dir))
	if err != nil {
		return nil, "", err
	}
	d.open[dir] = r
	return r, base, nil
}

// Close closes the directories opened.
func (d *DirRoots) Close() {
	for _, r := range d.open {
		r.Close()
	}
}

// read reads the small regular file name (a clean path).
func (d *DirRoots) read(name string) ([]byte, error) {
	r, base, err := d.split(name)
	if err != nil {
		return nil, err
	}
	f, fi, err := openstat.Open(r.Open, base)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !fi.Mode().IsRegular() || fi.Size() > BlockSize {
		return nil, fmt.Errorf("%s is not a small regular file", name)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("read %s: %w (did it shrink?)", name, err)
	}
	return data, nil
}

// Put writes data as the file name (a clean path) with m's mode and time:
// under a partial name first, renamed once complete.
func (d *DirRoots) Put(name string, data []byte, m FileMeta) error {
	r, base, err := d.split(name)
	if err != nil {
		return fmt.Errorf("open the directory of %s: %w", name, err)
	}
	partial := PartialName(base)
	if err := r.WriteFile(partial, data, 0o600); err != nil {
		r.Remove(partial)
		return WriteError(name, err)
	}
	if err := r.Chmod(partial, m.Mode.Perm()); err != nil {
		r.Remove(partial)
		return WriteError(name, err)
	}
	if err := r.Chtimes(partial, m.MTime, m.MTime); err != nil {
		r.Remove(partial)
		return WriteError(name, err)
	}
	if err := r.Rename(partial, base); err != nil {
		return fmt.Errorf("put %s in place: %w", name, err)
	}
	return nil
}

// PutNew writes data as the file name (a clean path) for a tree staged
// under a partial name; here it is Put (the Linux build saves its rename).
func (d *DirRoots) PutNew(name string, data []byte, m FileMeta) error {
	return d.Put(name, data, m)
}
