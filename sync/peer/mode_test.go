package peer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/peer"
)

// TestLoadOrCreateModes: the key, the certificate and the directory are the
// owner's alone, also when the directory existed with looser modes.
func TestLoadOrCreateModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := peer.LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	wantModes(t, dir)

	// An older labpool left the certificate 0644; someone opened the directory.
	os.Chmod(filepath.Join(dir, peer.CertFile), 0o644)
	os.Chmod(dir, 0o755)
	if _, err := peer.LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	wantModes(t, dir)
}

func TestSecureDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	os.Mkdir(dir, 0o700)
	os.Chmod(dir, 0o775)
	os.WriteFile(filepath.Join(dir, "agent.log"), []byte("x"), 0o600)
	os.Chmod(filepath.Join(dir, "agent.log"), 0o664)
	os.WriteFile(filepath.Join(dir, "mine"), []byte("x"), 0o600)
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("x"), 0o644)
	os.Chmod(target, 0o644)
	os.Symlink(target, filepath.Join(dir, "link"))

	fixed, err := peer.SecureDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(fixed, "\n")
	for _, want := range []string{dir + " was 0775, now 0700", "agent.log was 0664, now 0600"} {
		if !strings.Contains(got, want) {
			t.Errorf("SecureDir said %q; want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "mine") || strings.Contains(got, "link") {
		t.Errorf("SecureDir reported files it did not change: %q", got)
	}
	if info, _ := os.Stat(target); info.Mode().Perm() != 0o644 {
		t.Errorf("SecureDir followed a symlink out of the directory: %v", info.Mode())
	}
	if again, err := peer.SecureDir(dir); err != nil || len(again) != 0 {
		t.Errorf("second SecureDir = %q, %v; want nothing to do", again, err)
	}
	if _, err := peer.SecureDir(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("SecureDir of a missing directory: no error")
	}
}

func wantModes(t *testing.T, dir string) {
	t.Helper()
	for name, want := range map[string]os.FileMode{
		"":            os.ModeDir | 0o700,
		peer.KeyFile:  0o600,
		peer.CertFile: 0o600,
	} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %v; want %v", filepath.Join(dir, name), info.Mode(), want)
		}
	}
}
