package peerapi_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A peer path may be written in a table (peerapi.Add) or as a path
// constant of a sync/... protocol (JoinPath, StreamPath), and nowhere else:
// a caller that writes "/v1/..." bypasses the tables, the round trips and
// the role matrix.
var declaresPath = regexp.MustCompile(`peerapi\.Add\[|^\s*(const\s+)?\w+Path\s*=\s*"/v1/`)

// TestNoPeerPathOutsideTables: no Go file of the module (tests aside)
// writes a peer path but where it is declared.
func TestNoPeerPathOutsideTables(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == "frontend" || strings.HasPrefix(d.Name(), ".")) && p != root:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go"):
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			code, _, _ := strings.Cut(line, "//")
			if strings.Contains(code, `"/v1/`) && !declaresPath.MatchString(code) {
				t.Errorf("%s:%d writes a peer path outside a table: %s", p, n, strings.TrimSpace(line))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
