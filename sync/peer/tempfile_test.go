//go:build unix

package peer_test

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/labpool/labpool/sync/peer"
)

// TestLoadOrCreateRemovesStaleTemps: a load removes the temporary files a
// killed writer left (regular files of writeNew's pattern that no live
// writer locks) and nothing else: not a link of that name nor what it
// leads to, not a directory, not another file, not a live writer's file.
func TestLoadOrCreateRemovesStaleTemps(t *testing.T) {
	tests := []struct {
		name, file string
		make       func(t *testing.T, path string)
		wantGone   bool
	}{
		{"stale key", ".key.pem.tmp123456", writeFile, true},
		{"stale cert", ".cert.pem.tmp9", writeFile, true},
		{"live writer's key", ".key.pem.tmp777", writeLocked, false},
		{"link to a file", ".key.pem.tmp42", linkOutside, false},
		{"directory", ".key.pem.tmp43", mkdir, false},
		{"no random tail", ".key.pem.tmp", writeFile, false},
		{"not digits", ".key.pem.tmpx1", writeFile, false},
		{"not ours", ".replica.db.tmp1", writeFile, false},
		{"no dot", "key.pem.tmp1", writeFile, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := peer.LoadOrCreate(dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tt.file)
			tt.make(t, path)
			if _, err := peer.LoadOrCreate(dir); err != nil {
				t.Fatalf("load beside %s: %v", tt.file, err)
			}
			_, err := os.Lstat(path)
			if gone := os.IsNotExist(err); gone != tt.wantGone {
				t.Errorf("after a load %s gone = %v (%v), want %v", tt.file, gone, err, tt.wantGone)
			}
		})
	}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeLocked writes path and holds its lock, as a writer does, until the
// test ends.
func writeLocked(t *testing.T, path string) {
	t.Helper()
	writeFile(t, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

// linkOutside makes path a symbolic link to a file outside the directory,
// which must survive too.
func linkOutside(t *testing.T, path string) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "precious")
	writeFile(t, target)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(target); err != nil {
			t.Errorf("the link's target: %v", err)
		}
	})
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

// TestLoadOrCreateConcurrentCleaners: loads at once in a new directory,
// each removing what it takes for stale temporary files while others
// write theirs, all end with one identity and no temporary file.
func TestLoadOrCreateConcurrentCleaners(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		const n = 8
		ids := make([]peer.ID, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				id, err := peer.LoadOrCreate(dir)
				if err != nil {
					t.Errorf("load %d: %v", i, err)
					return
				}
				ids[i] = id.ID
			})
		}
		wg.Wait()
		for i := range ids {
			if ids[i] != ids[0] {
				t.Fatalf("load %d got %v, load 0 %v", i, ids[i], ids[0])
			}
		}
		if stale, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(stale) > 0 {
			t.Fatalf("temporary files left: %v", stale)
		}
	}
}
