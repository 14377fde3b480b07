package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestDevServerUI runs the browser checks that need no daemon, against the
// UI's dev server (frontend/e2e/devserver.mjs, which each script starts):
// the window at 1280×800 (e2e/layout.mjs: the Jobs actions, tunnel URLs and
// logs in view, a long machine name whole) and the alert rule editor on a
// machine without GPUs (e2e/alert_rules.mjs).
func TestDevServerUI(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	front, _ := filepath.Abs(filepath.Join("..", "..", "frontend"))
	for _, need := range []string{filepath.Join(front, "dist", "index.html"), filepath.Join(front, "node_modules", "playwright-core"), "/usr/bin/chromium"} {
		if _, err := os.Stat(need); err != nil {
			skipOrFail(t, "browser test needs "+need+" (npm run build, Debian's chromium)")
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	for _, script := range []string{"layout.mjs", "alert_rules.mjs"} {
		t.Run(script, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", filepath.Join("e2e", script), "--shots", t.TempDir())
			cmd.Dir = front
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", script, err, out)
			}
			t.Logf("%s", out)
		})
	}
}
