//go:build !linux

package folders

import (
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// rootDir reads a directory through its os.Root, by path.
type rootDir struct {
	root *os.Root
	name string
}

func openTop(root *os.Root, name string) (dirReader, error) { return rootDir{root, name}, nil }

func (d rootDir) list() ([]FileMeta, error) {
	f, err := d.root.Open(d.name)
	if err != nil {
		return nil, err
	}
	entries, err := f.ReadDir(-1) // in a Root each entry is lstat'ed here
	f.Close()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	out := make([]FileMeta, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		m, err := meta(d.root, path.Join(d.name, e.Name()), e.Name(), info)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func (d rootDir) sub(name string) (dirReader, error) {
	return rootDir{d.root, path.Join(d.name, name)}, nil
}

func (rootDir) close() {}
