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

	"github.com/labpool/labpool/internal/openstat"
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
	// Sharer is the device that shared it (this machine's, for a share
	// made here): with the pool's owners and admins, it may change Members
	// from any machine.
	Sharer string `json:"sharer,omitempty"`
	// Transient shares exist for one copy from a local path: never saved,
	// never listed to the pool, never mounted, and gone once unused for
	// Config.TransientIdle. A transient share's Path may be a file: the
	// share then holds that file alone, as its top.
	Transient bool `json:"-"`
}

// Store keeps the share definitions of this machine.
type Store interface {
	LoadShares() ([]Share, error)
	SaveShares([]Share) error
}

// Config is a registry's settings.
type Config struct {
	// Self is this machine's device ID: its own calls and grants may use
	// every share (a read-only one still refuses writes).
	Self string
	// DataDir is labpool's data directory: never shared, nor anything
	// that holds it.
	DataDir string
	// TransientIdle ends a transient share unused for this long.
	TransientIdle time.Duration
	// GrantIdle keeps a copy's grant valid past its expiry while the copy
	// uses it at least this often.
	GrantIdle time.Duration
	// MaxGrants bounds the copies served at once.
	MaxGrants int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// JobUser is the machine's job user, "uid:gid" (the jobs policy's;
	// nil or "": DefaultJobUser), the folder user of a share whose
	// directory belongs to root (FolderUser).
	JobUser func() string
	// PersonOf is the person whose device id is in the pool (the device ID
	// of the person's first device), as this machine's membership log
	// says; "" for a device that is not in the pool. A share's member
	// list names people: it is open to every device of a person listed
	// (nil: a list names devices alone).
	PersonOf func(id string) string
	// IsPerson reports whether id is a person with a device in the pool
	// (their first device may have left it): a change of members may list
	// them. nil: only devices in the pool may be listed.
	IsPerson func(id string) bool
}

// DefaultConfig returns the settings of a daemon's registry, without Self
// and DataDir.
func DefaultConfig() Config {
	return Config{TransientIdle: 3 * time.Minute, GrantIdle: 3 * time.Minute, MaxGrants: 4096}
}

// Registry holds this machine's shares.
type Registry struct {
	cfg     Config
	refused refusedPaths
	store   Store

	mu     sync.Mutex // guards shares, used, grants
	shares map[string]Share
	used   map[string]time.Time // transient share -> last use
	grants map[string]grantUse  // a grant in use (member + nonce) -> its last use
}

// Open loads the shares kept in store, with DefaultConfig.
func Open(store Store) (*Registry, error) { return OpenWith(DefaultConfig(), store) }

// OpenWith loads the shares kept in store. A saved share that is no longer
// allowed (a system directory) stays listed but refuses every use.
func OpenWith(cfg Config, store Store) (*Registry, error) {
	def := DefaultConfig()
	if cfg.TransientIdle <= 0 {
		cfg.TransientIdle = def.TransientIdle
	}
	if cfg.GrantIdle <= 0 {
		cfg.GrantIdle = def.GrantIdle
	}
	if cfg.MaxGrants <= 0 {
		cfg.MaxGrants = def.MaxGrants
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	list, err := store.LoadShares()
	if err != nil {
		return nil, fmt.Errorf("load shared folders: %w", err)
	}
	r := &Registry{cfg: cfg, refused: newRefusedPaths(cfg.DataDir), store: store,
		shares: map[string]Share{}, used: map[string]time.Time{}, grants: map[string]grantUse{}}
	for _, s := range list {
		r.shares[s.Name] = s
	}
	return r, nil
}

// Add shares a directory under a name (replacing a share of that name). A
// system directory, labpool's data directory, or one holding them is
// refused (ErrRefusedPath).
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
	if !fi.IsDir() && !s.Transient {
		return Share{}, fmt.Errorf("share %s: %s is not a directory", s.Name, abs)
	}
	if _, err := r.refused.check(abs); err != nil {
		return Share{}, err
	}
	if s.ReadWrite && !s.Transient && fi.IsDir() {
		o, err := FolderUser(abs, r.jobUser())
		if err == nil {
			err = giveRootDir(abs, o)
		}
		if err != nil {
			return Share{}, fmt.Errorf("share %s read-write: %w", s.Name, err)
		}
	}
	s.Path = abs
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.shares[s.Name]
	r.shares[s.Name] = s
	delete(r.used, s.Name)
	if s.Transient {
		r.used[s.Name] = r.cfg.Now()
	}
	if s.Transient && (!had || old.Transient) {
		return s, nil // nothing saved changes
	}
	return s, r.saveLocked()
}

func (r *Registry) jobUser() string {
	if r.cfg.JobUser == nil {
		return ""
	}
	return r.cfg.JobUser()
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
	delete(r.used, name)
	if s.Transient {
		return nil // it was never saved
	}
	return r.saveLocked()
}

// DropTransient ends the transient shares offered to the device member
// and the copies it was granted or granted (for a device removed from the
// pool): they refuse every request from now on.
func (r *Registry) DropTransient(member string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, s := range r.shares {
		if s.Transient && slices.Contains(s.Members, member) {
			delete(r.shares, name)
			delete(r.used, name)
		}
	}
	for k, u := range r.grants {
		if u.member == member || u.receiver == member {
			delete(r.grants, k)
		}
	}
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

// Get returns one share. A transient share unused for TransientIdle is
// gone, whatever its copy's receiver says.
func (r *Registry) Get(name string) (Share, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.getLocked(name)
}

func (r *Registry) getLocked(name string) (Share, error) {
	s, ok := r.shares[name]
	if ok && s.Transient && r.cfg.Now().Sub(r.used[name]) > r.cfg.TransientIdle {
		delete(r.shares, name)
		delete(r.used, name)
		ok = false
	}
	if !ok {
		return Share{}, fmt.Errorf("%w: %q", ErrNoShare, name)
	}
	return s, nil
}

// touch records a use of a transient share.
func (r *Registry) touch(s Share) {
	if !s.Transient {
		return
	}
	r.mu.Lock()
	if _, ok := r.shares[s.Name]; ok {
		r.used[s.Name] = r.cfg.Now()
	}
	r.mu.Unlock()
}

// Resolve implements jobs.FolderResolver: the directory of a share, for a
// job's mount on this machine. It checks no member list: use ResolveFor.
func (r *Registry) Resolve(name string) (string, bool, error) {
	s, err := r.Get(name)
	if err != nil {
		return "", false, err
	}
	if s.Transient {
		return "", false, fmt.Errorf("%w: %q (offered for one copy, never mounted)", ErrNoShare, name)
	}
	real, err := r.refused.check(s.Path)
	return real, s.ReadWrite, err
}

// ResolveFor returns the directory of a share for a job of the device
// member on this machine, refusing a device not on the share's member
// list (ErrNotMember), a write to a read-only share (ErrReadOnly), a
// transient share and a system directory (ErrRefusedPath). The path
// returned has its symlinks resolved. The caller checks member's role.
func (r *Registry) ResolveFor(name, member string, rw bool) (string, error) {
	s, err := r.Get(name)
	if err != nil {
		return "", err
	}
	if s.Transient {
		return "", fmt.Errorf("%w: %q (offered for one copy, never mounted)", ErrNoShare, name)
	}
	if member == "" {
		return "", fmt.Errorf("%w: %s: a mount needs the device of the job's owner", ErrNotMember, name)
	}
	if err := r.listed(s, member); err != nil {
		return "", err
	}
	if rw && !s.ReadWrite {
		return "", fmt.Errorf("%w: %s: a job mounts it read-only or not at all", ErrReadOnly, name)
	}
	return r.refused.check(s.Path)
}

// listed refuses member (a device) when s has a member list without it
// or its person (Config.PersonOf); this machine is always on it.
func (r *Registry) listed(s Share, member string) error {
	if r.cfg.Self != "" && member == r.cfg.Self {
		return nil
	}
	if len(s.Members) == 0 || slices.Contains(s.Members, member) {
		return nil
	}
	if r.cfg.PersonOf != nil {
		if p := r.cfg.PersonOf(member); p != "" && slices.Contains(s.Members, p) {
			return nil // a device of a person listed
		}
	}
	return fmt.Errorf("%w: %s is shared with its member list only", ErrNotMember, s.Name)
}

// OpenRoot opens a share for member (a device ID; "" for this machine
// itself) as an os.Root, refusing non-members and writes to a read-only
// share. It checks no role and no grant: requests from the network go
// through OpenFor and OpenGranted. The caller closes the root. A one-file
// transient share opens its directory.
func (r *Registry) OpenRoot(name, member string, write bool) (*os.Root, Share, error) {
	s, err := r.Get(name)
	if err != nil {
		return nil, Share{}, err
	}
	if member != "" {
		if err := r.listed(s, member); err != nil {
			return nil, Share{}, err
		}
	}
	if write && !s.ReadWrite {
		return nil, Share{}, fmt.Errorf("%w: %s", ErrReadOnly, name)
	}
	o, err := r.openShare(s)
	if err != nil {
		return nil, Share{}, err
	}
	if o.file != "" {
		o.Close()
		return nil, Share{}, fmt.Errorf("%w: %s offers one file: open it with OpenFor", ErrBadPath, name)
	}
	return o.Root, s, nil
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
	f, fi, err := openstat.Open(root.Open, clean)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
