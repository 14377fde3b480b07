package folders

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestCleanPath(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{"", ".", false},
		{"/", ".", false},
		{"a/b/c.txt", "a/b/c.txt", false},
		{"a//b/./c", "a/b/c", false},
		{"dir/", "dir", false},
		{"with space/ünïcödé ☃.txt", "with space/ünïcödé ☃.txt", false},
		{"..", "", true},
		{"../etc/passwd", "", true},
		{"a/../../b", "", true},
		{"a/..", "", true},
		{"/etc/passwd", "", true},
		{"a\x00b", "", true},
		{strings.Repeat("n", 256), "", true},
		{strings.Repeat("a/", 2100), "", true},
		{"\xff\xfe", "", true},
	}
	// Backslashes and colons mean something on Windows only.
	for _, p := range []string{`\windows`, "C:/x", `a\..\b`, "1:2.txt", `dir/back\slash`} {
		want := path.Clean(p)
		if windowsPaths {
			want = ""
		}
		tests = append(tests, struct {
			in, want string
			bad      bool
		}{p, want, windowsPaths})
	}
	for _, tt := range tests {
		got, err := CleanPath(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q, bad %v", tt.in, got, err, tt.want, tt.bad)
		}
		if err != nil && !errors.Is(err, ErrBadPath) {
			t.Errorf("CleanPath(%q) error %v is not ErrBadPath", tt.in, err)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/abs", "a/./b/../c", "a\x00", "ok/ünï"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := CleanPath(p)
		if err != nil {
			return
		}
		if strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../") || strings.Contains(c, "/../") || strings.ContainsRune(c, 0) {
			t.Fatalf("CleanPath(%q) = %q escapes", p, c)
		}
	})
}

type memStore struct {
	mu     sync.Mutex
	shares []Share
}

func (m *memStore) LoadShares() ([]Share, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.shares, nil
}
func (m *memStore) SaveShares(s []Share) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.shares = s
	return nil
}

// setup makes a share with a file, a directory, and symlinks pointing out.
func setup(t *testing.T) (*Registry, string, string) {
	t.Helper()
	base := t.TempDir()
	dir, outside := filepath.Join(base, "share"), filepath.Join(base, "secret")
	for _, d := range []string{dir, outside, filepath.Join(dir, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "key"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(dir, "data.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "x.bin"), make([]byte, 1000), 0o644)
	os.Symlink(outside, filepath.Join(dir, "escape-dir"))
	os.Symlink(filepath.Join(outside, "key"), filepath.Join(dir, "escape-file"))
	os.Symlink("../secret/key", filepath.Join(dir, "escape-rel"))
	r, err := Open(&memStore{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(Share{Name: "data", Path: dir, Members: []string{"ALICE"}}); err != nil {
		t.Fatal(err)
	}
	return r, dir, outside
}

// TestTraversalMatrix: nothing under a share reaches outside it.
func TestTraversalMatrix(t *testing.T) {
	r, _, _ := setup(t)
	root, _, err := r.OpenRoot("data", "ALICE", false)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, p := range []string{"escape-file", "escape-rel", "escape-dir/key", "sub/../../secret/key"} {
		if f, err := root.Open(p); err == nil {
			b := make([]byte, 16)
			n, _ := f.Read(b)
			f.Close()
			t.Errorf("opened %q through the root: %q", p, b[:n])
		}
		if _, err := ReadDir(root, p); err == nil && strings.Contains(p, "escape-dir") {
			t.Errorf("listed %q through the root", p)
		}
	}
	if _, err := root.OpenFile("escape-dir/new", os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		t.Errorf("created a file through a symlink out of the share")
	}
	if _, err := ReadDir(root, "../secret"); !errors.Is(err, ErrBadPath) {
		t.Errorf("ReadDir(../secret) = %v", err)
	}
	es, err := ReadDir(root, ".")
	if err != nil || len(es) != 5 || !es[0].Dir || es[0].Name != "sub" {
		t.Errorf("ReadDir(.) = %+v, %v", es, err)
	}
	size, files, err := Usage(root)
	if err != nil || size != 1005 || files != 5 {
		t.Errorf("Usage = %d bytes, %d files, %v; want 1005 bytes in 5 entries (3 links counted, not followed)", size, files, err)
	}
}

func TestMembershipAndReadOnly(t *testing.T) {
	r, _, _ := setup(t)
	if _, _, err := r.OpenRoot("data", "MALLORY", false); !errors.Is(err, ErrNotMember) {
		t.Errorf("non-member: %v", err)
	}
	if _, _, err := r.OpenRoot("data", "ALICE", true); !errors.Is(err, ErrReadOnly) {
		t.Errorf("write to a read-only share: %v", err)
	}
	if _, _, err := r.OpenRoot("nope", "ALICE", false); !errors.Is(err, ErrNoShare) {
		t.Errorf("unknown share: %v", err)
	}
	if _, err := r.Add(Share{Name: "../x", Path: t.TempDir()}); err == nil {
		t.Errorf("a bad share name was accepted")
	}
	if _, err := r.Add(Share{Name: "file", Path: "/etc/hostname"}); err == nil {
		t.Errorf("a file was shared as a folder")
	}
	path, rw, err := r.Resolve("data")
	if err != nil || rw || !filepath.IsAbs(path) {
		t.Errorf("Resolve = %q %v %v", path, rw, err)
	}
	if err := r.Remove("data"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Resolve("data"); !errors.Is(err, ErrNoShare) {
		t.Errorf("after unshare: %v", err)
	}
}

// countingStore counts the saves of the share list.
type countingStore struct {
	memStore
	saves int
}

func (c *countingStore) SaveShares(s []Share) error {
	c.saves++
	return c.memStore.SaveShares(s)
}

// TestTransientShares: a share offered for one copy is served like any
// other but never saved, and adding or removing one writes nothing.
func TestTransientShares(t *testing.T) {
	store := &countingStore{}
	r, err := Open(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(Share{Name: "kept", Path: t.TempDir()}); err != nil || store.saves != 1 {
		t.Fatalf("add a share: %v, %d saves", err, store.saves)
	}
	if _, err := r.Add(Share{Name: "xfer-1", Path: t.TempDir(), Members: []string{"BOB"}, Transient: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.OpenRoot("xfer-1", "BOB", false); err != nil {
		t.Errorf("the transient share is not served: %v", err)
	}
	if err := r.Remove("xfer-1"); err != nil {
		t.Fatal(err)
	}
	if store.saves != 1 || len(store.shares) != 1 || store.shares[0].Name != "kept" {
		t.Errorf("after a transient share came and went: %d saves, saved %+v", store.saves, store.shares)
	}
	// A transient share that replaces a kept one of the same name is saved
	// as gone.
	if _, err := r.Add(Share{Name: "kept", Path: t.TempDir(), Transient: true}); err != nil {
		t.Fatal(err)
	}
	if store.saves != 2 || len(store.shares) != 0 {
		t.Errorf("a kept share replaced by a transient one: %d saves, saved %+v", store.saves, store.shares)
	}
}
