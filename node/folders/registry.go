package folders

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// Sentinels callers branch on.
var (
	ErrNoShare   = errors.New("no such shared folder")
	ErrReadOnly  = errors.New("the folder is shared read-only")
	ErrNotMember = errors.New("this folder is not shared with you")
)

// Share is one shared directory of this machine.
type Share struct {
	Name      string   `json:"name"`
	Path      string   `json:"path"` // absolute directory here; never sent to members
	ReadWrite bool     `json:"rw"`
	Members   []string `json:"members,omitempty"` // device IDs allowed; empty: every member
	// Transient shares exist for one copy from a local path: never saved,
	// never listed to the pool.
	Transient bool `json:"-"`
}

// Store keeps the share definitions of this machine.
type Store interface {
	LoadShares() ([]Share, error)
	SaveShares([]Share) error
}

// Registry holds this machine's shares.
type Registry struct {
	store Store

	mu     sync.Mutex // guards shares
	shares map[string]Share
}

// Open loads the shares kept in store.
func Open(store Store) (*Registry, error) {
	list, err := store.LoadShares()
	if err != nil {
		return nil, fmt.Errorf("load shared folders: %w", err)
	}
	r := &Registry{store: store, shares: map[string]Share{}}
	for _, s := range list {
		r.shares[s.Name] = s
	}
	return r, nil
}

// Add shares a directory under a name (replacing a share of that name).
func (r *Registry) Add(s Share) (Share, error) {
	if !ValidName(s.Name) {
		return Share{}, fmt.Errorf("share name %q: use 1 to 64 letters, digits, '.', '_' or '-'", s.Name)
	}
	abs, err := filepath.Abs(s.Path)
	if err != nil {
		return Share{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Share{}, fmt.Errorf("share %s: %w", s.Name, err)
	}
	if !fi.IsDir() {
		return Share{}, fmt.Errorf("share %s: %s is not a directory", s.Name, abs)
	}
	s.Path = abs
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.shares[s.Name]
	r.shares[s.Name] = s
	if s.Transient && (!had || old.Transient) {
		return s, nil // nothing saved changes
	}
	return s, r.saveLocked()
}

// Remove stops sharing name.
func (r *Registry) Remove(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.shares[name]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoShare, name)
	}
	delete(r.shares, name)
	if s.Transient {
		return nil // it was never saved
	}
	return r.saveLocked()
}

func (r *Registry) saveLocked() error {
	list := make([]Share, 0, len(r.shares))
	for _, s := range r.shares {
		if !s.Transient {
			list = append(list, s)
		}
	}
	sort.Slice(list, func(i, k int) bool { return list[i].Name < list[k].Name })
	return r.store.SaveShares(list)
}

// List returns the shares, by name, transient ones left out.
func (r *Registry) List() []Share {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Share, 0, len(r.shares))
	for _, s := range r.shares {
		if !s.Transient {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// Get returns one share.
func (r *Registry) Get(name string) (Share, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.shares[name]
	if !ok {
		return Share{}, fmt.Errorf("%w: %q", ErrNoShare, name)
	}
	return s, nil
}

// Resolve implements jobs.FolderResolver: the directory of a share, for a
// job's mount on this machine.
func (r *Registry) Resolve(name string) (string, bool, error) {
	s, err := r.Get(name)
	return s.Path, s.ReadWrite, err
}

// OpenRoot opens a share for member (a device ID; "" for this machine
// itself) as an os.Root, refusing non-members and writes to a read-only
// share. The caller closes the root.
func (r *Registry) OpenRoot(name, member string, write bool) (*os.Root, Share, error) {
	s, err := r.Get(name)
	if err != nil {
		return nil, Share{}, err
	}
	if member != "" && len(s.Members) > 0 && !slices.Contains(s.Members, member) {
		return nil, Share{}, fmt.Errorf("%w: %s", ErrNotMember, name)
	}
	if write && !s.ReadWrite {
		return nil, Share{}, fmt.Errorf("%w: %s", ErrReadOnly, name)
	}
	root, err := os.OpenRoot(s.Path)
	if err != nil {
		return nil, Share{}, fmt.Errorf("open share %s: %w", name, err)
	}
	return root, s, nil
}

// Entry is one item of a folder listing.
type Entry struct {
	Name    string      `json:"name"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	ModTime time.Time   `json:"mtime"`
	Dir     bool        `json:"dir"`
	Link    bool        `json:"link,omitempty"`
}

// ReadDir lists the directory p of root without following symlinks.
func ReadDir(root *os.Root, p string) ([]Entry, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	f, err := root.Open(clean)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []Entry{entry(fi)}, nil
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		info, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, entry(info))
	}
	sort.Slice(out, func(i, k int) bool {
		if out[i].Dir != out[k].Dir {
			return out[i].Dir
		}
		return out[i].Name < out[k].Name
	})
	return out, nil
}

func entry(fi fs.FileInfo) Entry {
	return Entry{Name: fi.Name(), Size: fi.Size(), Mode: fi.Mode().Perm(), ModTime: fi.ModTime().UTC(),
		Dir: fi.IsDir(), Link: fi.Mode()&fs.ModeSymlink != 0}
}

// Usage walks a share's tree and returns its total size and file count;
// symlinks are counted, never followed. Parts that cannot be read are
// skipped.
func Usage(root *os.Root) (size int64, files int, err error) {
	if items, err := Walk(root, "."); err == nil {
		for _, it := range items[1:] { // the top is not counted
			if !it.Dir {
				files++
				size += it.Size // a link's is 0
			}
		}
		return size, files, nil
	}
	// Something is unreadable: a slower walk goes around it.
	err = fs.WalkDir(root.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			return nil
		}
		files++
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			size += info.Size()
		}
		return nil
	})
	return size, files, err
}
