package copies

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// cutSource sends the first half of each bundle, then breaks off, as a
// source whose agent is killed mid-stream.
type cutSource struct{ RootSource }

func (c cutSource) Bundle(ctx context.Context, paths []string) (io.ReadCloser, error) {
	var honest bytes.Buffer
	if err := folders.WriteBundle(c.Root, paths, &honest); err != nil {
		return nil, err
	}
	half := honest.Bytes()[:honest.Len()/2]
	return io.NopCloser(io.MultiReader(bytes.NewReader(half), errReader{io.ErrUnexpectedEOF})), nil
}

// stagedTree is a tree of small files, all of n bytes.
func stagedTree(t *testing.T, n int) string {
	src := t.TempDir()
	mt := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, name := range []string{"a", "b", "c", "sub/d", "sub/e", "sub/f", "sub/deeper/g", "sub/deeper/h"} {
		write(t, filepath.Join(src, "top", name), randBytes(n), 0o644, mt)
	}
	write(t, filepath.Join(src, "top", "exec.sh"), randBytes(n), 0o755, mt)
	write(t, filepath.Join(src, "top", "private"), randBytes(n), 0o600, mt)
	os.Chmod(filepath.Join(src, "top", "sub"), 0o750)
	return src
}

// TestStagedTree: a new tree is written under its staging name and appears
// under its own only once complete; a copy cut short leaves nothing under
// the final name, and the next one goes on from the staged tree, sending
// only the files it lacks and replacing one that was damaged there.
func TestStagedTree(t *testing.T) {
	const n = 1000
	src, dst := stagedTree(t, n), t.TempDir()
	final, stage := filepath.Join(dst, "top"), filepath.Join(dst, folders.PartialPrefix+"top")
	cut := &Pull{Src: cutSource{RootSource{mustRoot(t, src)}}, SrcPath: "top", SrcName: "top", Dst: mustRoot(t, dst), DstPath: "./", Streams: 1}
	if _, err := cut.Run(context.Background()); err == nil {
		t.Fatal("a copy whose source broke off succeeded")
	}
	if _, err := os.Lstat(final); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a cut copy left something under the final name: %v", err)
	}
	fi, err := os.Stat(stage)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("staged tree: %v, %v (want a private directory)", fi, err)
	}
	var staged []string
	filepath.WalkDir(stage, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(stage, p)
			want, _ := os.ReadFile(filepath.Join(src, "top", rel))
			if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
				t.Errorf("staged %s is incomplete", rel)
			}
			staged = append(staged, rel)
		}
		return nil
	})
	if len(staged) < 2 {
		t.Fatalf("the cut copy staged %v: the test cuts too early", staged)
	}
	// One staged file is damaged meanwhile: it is sent again.
	os.WriteFile(filepath.Join(stage, staged[0]), []byte("damaged"), 0o644)

	got := pull(t, src, dst, "top", "./")
	sameTree(t, filepath.Join(src, "top"), final)
	if want := int64(10-len(staged)+1) * n; got.Sent != want {
		t.Errorf("the resumed copy sent %d bytes, want %d (%d files were staged, one damaged)", got.Sent, want, len(staged))
	}
	if _, err := os.Lstat(stage); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the staging directory is left: %v", err)
	}
	if fi, _ := os.Stat(final); fi.Mode().Perm() != 0o755 {
		t.Errorf("the copied top has mode %v, want the source's", fi.Mode())
	}
}

// TestStageNameTaken: a link planted under a new tree's staging name is
// removed, never followed, and a file there is replaced.
func TestStageNameTaken(t *testing.T) {
	src := stagedTree(t, 10)
	for _, plant := range []string{"link", "file"} {
		t.Run(plant, func(t *testing.T) {
			base := t.TempDir()
			share, outside := filepath.Join(base, "share"), filepath.Join(base, "outside")
			victim := filepath.Join(share, "victim")
			os.MkdirAll(victim, 0o755)
			os.MkdirAll(outside, 0o755)
			stage := filepath.Join(share, folders.PartialPrefix+"top")
			if plant == "link" {
				os.Symlink(victim, stage)
				os.Symlink(outside, filepath.Join(share, folders.PartialPrefix+"top2"))
			} else {
				os.WriteFile(stage, []byte("x"), 0o644)
				os.WriteFile(filepath.Join(share, folders.PartialPrefix+"top2"), []byte("x"), 0o644)
			}
			pull(t, src, share, "top", "./")
			sameTree(t, filepath.Join(src, "top"), filepath.Join(share, "top"))
			p := &Pull{Src: RootSource{mustRoot(t, src)}, SrcPath: "top", SrcName: "top2", Dst: mustRoot(t, share), DstPath: "./"}
			if _, err := p.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			sameTree(t, filepath.Join(src, "top"), filepath.Join(share, "top2"))
			for _, dir := range []string{victim, outside} {
				if es, _ := os.ReadDir(dir); len(es) != 0 {
					t.Errorf("the copy wrote through the planted %s into %s: %v", plant, dir, es)
				}
			}
		})
	}
}
