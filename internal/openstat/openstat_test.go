package openstat

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, fi, err := Open(root.Open, "a")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi.Size() != 3 || !fi.Mode().IsRegular() {
		t.Errorf("stat = %d bytes, mode %v; want 3, regular", fi.Size(), fi.Mode())
	}
	if _, _, err := Open(os.Open, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open missing: %v, want fs.ErrNotExist", err)
	}
}
