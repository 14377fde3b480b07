package store_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// TestDataDirModes opens an identity and a replica the way the daemon does,
// in a directory another user could read, and checks that nobody but the
// owner can read or change anything in it afterwards.
func TestDataDirModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // whatever the umask
	// A replica and a settings file left by an older labpool, world-readable.
	db := filepath.Join(dir, "replica.db")
	for _, name := range []string{"replica.db", "replica.db-wal", "replica.db-shm", "settings.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, name), 0o644)
	}
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")

	fixed, err := peer.SecureDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) == 0 {
		t.Errorf("SecureDir tightened %s and said nothing", dir)
	}
	if _, err := peer.LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetSetting(context.Background(), "x", "y"); err != nil {
		t.Fatal(err)
	}
	checkModes(t, dir, db+"-wal", db+"-shm", filepath.Join(dir, peer.KeyFile), filepath.Join(dir, peer.CertFile))
}

// TestOpenNewReplicaMode: a replica created in a fresh directory (umask 022)
// is 0600 with its WAL and shared-memory files.
func TestOpenNewReplicaMode(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "replica.db")
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetSetting(context.Background(), "x", "y"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o700) // t.TempDir's own mode is not the store's business
	checkModes(t, dir, db, db+"-wal", db+"-shm")
}

// TestOpenTightensReplica: a replica from before (0644, with its WAL)
// becomes 0600 when opened.
func TestOpenTightensReplica(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "replica.db")
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSetting(context.Background(), "x", "y")
	s.Close()
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		os.Chmod(f, 0o644) // a missing -wal or -shm is fine
	}
	s, err = store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetSetting(context.Background(), "x", "z")
	os.Chmod(dir, 0o700)
	checkModes(t, dir, db)
}

// checkModes stats every file under dir: the directory must be 0700, every
// file 0600, and each of want must exist.
func checkModes(t *testing.T, dir string, want ...string) {
	t.Helper()
	for _, f := range want {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		info, err := os.Lstat(path)
		if err != nil {
			t.Error(err)
			return nil
		}
		wantMode := fs.FileMode(0o600)
		if d.IsDir() {
			wantMode = fs.ModeDir | 0o700
		}
		if info.Mode() != wantMode {
			t.Errorf("%s: mode %v; want %v", path, info.Mode(), wantMode)
		}
		return nil
	})
}
