package containers

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBookErrorsLogged: a record of image loaders that cannot be saved or
// read is said so in the log, not dropped; the record in memory holds.
func TestBookErrorsLogged(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.json")
	if err := os.WriteFile(corrupt, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		wantLog    string
	}{
		{"saved", filepath.Join(dir, "loaders.json"), ""},
		{"no such directory", filepath.Join(dir, "gone", "loaders.json"), "was not saved"},
		{"corrupt at start", corrupt, "is lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			cfg := DefaultConfig()
			cfg.ImageBook = tt.path
			cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
			r := newRuntime(cfg, &fakeDocker{})
			r.recordLoader([]string{"sha256:a"}, map[string]bool{}, map[string]bool{"sha256:a": true}, "dev1")
			if got := r.book.loader("sha256:a"); got != "dev1" {
				t.Errorf("loader in memory %q; want dev1", got)
			}
			if tt.wantLog == "" {
				if logs.Len() > 0 {
					t.Errorf("logged %q; want nothing", logs.String())
				}
				if b, err := openBook(tt.path); err != nil || b.loader("sha256:a") != "dev1" {
					t.Errorf("book read back: %v, %v; want dev1", b.snapshot(), err)
				}
				return
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("logged %q; want a WARN saying %q", logs.String(), tt.wantLog)
			}
		})
	}
}
