//go:build linux

package containers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// TestJobOverwritesACopiedFile: a member copies a file into a read-write
// share, then that member's job, on a real engine, mounts the share and
// overwrites it, as the folder user both follow (folders.FolderUser): the
// report of the lab, where the job got "Permission denied" on a file the
// copy wrote as root, into a root-owned directory.
func TestJobOverwritesACopiedFile(t *testing.T) {
	r := openRuntime(t)
	if r.RemapsUsers() {
		t.Skip("this engine remaps users: jobs run as its remapped user, not the folder user")
	}
	for _, owner := range []int{0, 1000} {
		t.Run(fmt.Sprintf("directory of uid %d", owner), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "results")
			os.Mkdir(dir, 0o755)
			for p := filepath.Dir(dir); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
				os.Chmod(p, 0o755)
			}
			if err := os.Chown(dir, owner, owner); err != nil {
				t.Fatal(err)
			}
			cfg := folders.DefaultConfig()
			cfg.DataDir = t.TempDir()
			reg, err := folders.OpenWith(cfg, &memShares{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := reg.Add(folders.Share{Name: "results", Path: dir, ReadWrite: true}); err != nil {
				t.Fatal(err)
			}
			// What the copy's receiver does: it writes as root (the
			// daemon), then gives what it wrote to the folder user.
			o, err := folders.FolderUser(dir, DefaultJobUser)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "mydata"), []byte("copied"), 0o644)
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			if err := folders.ChownTree(root, "mydata", o); err != nil {
				t.Fatal(err)
			}
			l := launch(fmt.Sprintf("lp-folderuser-%d", time.Now().UnixNano()), "sh", "-c",
				`echo rewritten > /out/mydata; echo "over=$?"; echo new > /out/new; echo "create=$?"`)
			l.User = fmt.Sprintf("%d:%d", o.UID, o.GID) // the job's user: node/jobs runAs, the same rule
			l.Binds = []Bind{{HostPath: dir, Target: "/out"}}
			out := runToEnd(t, r, l)
			for _, want := range []string{"over=0", "create=0"} {
				if !strings.Contains(out, want) {
					t.Errorf("the job as %s said %q; want %q", l.User, out, want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "mydata")); string(b) != "rewritten\n" {
				t.Errorf("the copied file holds %q after the job", b)
			}
		})
	}
}

type memShares struct{ s []folders.Share }

func (m *memShares) LoadShares() ([]folders.Share, error) { return m.s, nil }
func (m *memShares) SaveShares(s []folders.Share) error   { m.s = s; return nil }
