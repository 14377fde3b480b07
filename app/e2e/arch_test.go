//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// archFiles is what of one package `go list` says depends on the target.
type archFiles struct {
	ImportPath                                      string
	GoFiles, CgoFiles, SFiles, CFiles, IgnoredFiles []string
	Imports                                         []string
	TestGoFiles, XTestGoFiles                       []string
}

// listArch lists labpool's packages as they build for linux/goarch with
// cgo (the NVML build) and tags, by import path.
func listArch(t *testing.T, goarch, tags string) map[string]archFiles {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", tags, "-json=ImportPath,GoFiles,CgoFiles,SFiles,CFiles,IgnoredGoFiles,Imports,TestGoFiles,XTestGoFiles", "./...")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list for linux/%s: %v\n%s", goarch, err, stderr.Bytes())
	}
	pkgs := map[string]archFiles{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			archFiles
			IgnoredGoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list for linux/%s: %v", goarch, err)
		}
		p.IgnoredFiles = p.IgnoredGoFiles
		pkgs[p.ImportPath] = p.archFiles
	}
	return pkgs
}

// TestNoArchCode checks that labpool has no code path of its own that
// differs between amd64 and arm64: every package builds from the same
// files (Go, cgo, assembly, C), imports the same packages and runs the same
// tests on both, with and without the window (tag headless). The arm64
// agent's cost cannot be measured under emulation; this is what shows it
// runs the code measured on amd64. (Dependencies may have assembly per
// architecture, e.g. crypto; that is theirs.)
func TestNoArchCode(t *testing.T) {
	for _, tags := range []string{"", "headless"} {
		amd, arm := listArch(t, "amd64", tags), listArch(t, "arm64", tags)
		if len(amd) < 20 {
			t.Fatalf("go list found %d packages for amd64 (tags %q), want labpool's", len(amd), tags)
		}
		if d := cmp.Diff(amd, arm); d != "" {
			t.Errorf("labpool's packages differ between linux/amd64 and linux/arm64 (tags %q; -amd64 +arm64):\n%s", tags, d)
		}
	}
	// Nor does a file name its architecture: both lists would then leave it
	// out alike for a third one (e.g. a _amd64.go and a _arm64.go).
	cmd := exec.Command("git", "ls-files", "*.go", "*.s", "*.c")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a checkout)", err)
	}
	for _, f := range strings.Fields(string(out)) {
		for _, arch := range []string{"amd64", "arm64", "386", "arm", "riscv64", "ppc64le", "s390x", "loong64"} {
			if strings.HasSuffix(strings.TrimSuffix(strings.TrimSuffix(f, "_test.go"), ".go"), "_"+arch) {
				t.Errorf("%s is built for %s only", f, arch)
			}
		}
		b, err := os.ReadFile(fmt.Sprintf("%s/%s", repoRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "//go:build") && (strings.Contains(line, "amd64") || strings.Contains(line, "arm64")) {
				t.Errorf("%s has a build constraint by architecture: %s", f, line)
			}
		}
	}
}
