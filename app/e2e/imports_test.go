//go:build linux

package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection enforces the arrows of STYLE.md: node/... and
// discovery import no other labpool package (but the leaves under
// internal/, which import none), sync/... never imports app, and only main
// imports Wails; node/jobs knows no executor (no Docker).
func TestImportDirection(t *testing.T) {
	const mod = "github.com/labpool/labpool"
	rules := []struct {
		pkgs      string
		forbidden []string
	}{
		{"./node/...", []string{mod + "/app", mod + "/sync", mod + "/discovery"}},
		{"./node/jobs/...", []string{mod + "/node/containers", "github.com/docker"}}, // executors import jobs, never the other way
		{"./discovery/...", []string{mod + "/app", mod + "/sync", mod + "/node"}},
		{"./sync/...", []string{mod + "/app"}},
		{"./internal/...", []string{mod + "/app", mod + "/sync", mod + "/node", mod + "/discovery"}}, // leaves every tree may share
		{"./app/...", []string{"github.com/wailsapp/wails/v2"}},
	}
	for _, r := range rules {
		for _, tags := range []string{"", "headless"} {
			cmd := exec.Command("go", "list", "-tags", tags, "-deps", "-f", "{{.ImportPath}}", r.pkgs)
			cmd.Dir = repoRoot()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list %s: %v\n%s", r.pkgs, err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, bad := range r.forbidden {
					if dep == bad || strings.HasPrefix(dep, bad+"/") {
						t.Errorf("%s (tags %q) imports %s", r.pkgs, tags, dep)
					}
				}
			}
		}
	}
}

// TestHeadlessLinksNoGUI checks that the agent build has no Wails, GTK or WebKit.
func TestHeadlessLinksNoGUI(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "headless", "-deps", "-f", "{{.ImportPath}}", "../..").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "wailsapp/wails") {
		t.Errorf("the headless build imports Wails")
	}
}

// TestHeadlessBinaryLdd checks the built agent with ldd, as a server admin would.
func TestHeadlessBinaryLdd(t *testing.T) {
	if testing.Short() || bin == "" {
		t.Skip("no binary built in -short mode")
	}
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("ldd %s: %v\n%s", bin, err, out)
	}
	for _, lib := range []string{"gtk", "webkit", "javascriptcore"} {
		if strings.Contains(strings.ToLower(string(out)), lib) {
			t.Errorf("the headless binary links %s:\n%s", lib, out)
		}
	}
	t.Logf("ldd %s:\n%s", "bin/labpool", out)
}
