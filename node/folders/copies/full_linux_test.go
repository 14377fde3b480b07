package copies

import (
	"context"
	"errors"
	"github.com/labpool/labpool/node/folders"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// smallDisk mounts a tmpfs of size bytes (root only) and returns its path.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system to fill needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// TestFullDestination: a copy onto a full disk fails with a clear error and
// leaves nothing under a final name; once space is freed it resumes.
func TestFullDestination(t *testing.T) {
	disk := smallDisk(t, "8m")
	src := t.TempDir()
	mt := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	write(t, filepath.Join(src, "data", "big.bin"), randBytes(6*folders.BlockSize), 0o644, mt)
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		write(t, filepath.Join(src, "data", "small", n), randBytes(folders.BlockSize-1), 0o644, mt)
	}
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, randBytes(4*folders.BlockSize), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, srcPath := range []string{"data/big.bin", "data/small"} {
		p := &Pull{Src: RootSource{mustRoot(t, src)}, SrcPath: srcPath, SrcName: filepath.Base(srcPath), Dst: mustRoot(t, disk), DstPath: "."}
		_, err := p.Run(context.Background())
		if !errors.Is(err, folders.ErrFull) || !strings.Contains(err.Error(), "no space left") {
			t.Fatalf("copy of %s onto a full disk: err = %v, want folders.ErrFull", srcPath, err)
		}
		t.Logf("%s: %v", srcPath, err)
		filepath.Walk(disk, func(path string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() && strings.HasPrefix(fi.Name(), folders.PartialPrefix) {
				return filepath.SkipDir // a staged tree: no name in it is final
			}
			if err != nil || fi.IsDir() || path == filler || strings.HasPrefix(fi.Name(), folders.PartialPrefix) {
				return nil
			}
			if want, err := os.ReadFile(filepath.Join(src, "data", strings.TrimPrefix(path, disk))); err != nil || fi.Size() != int64(len(want)) {
				t.Errorf("%s is under its final name but incomplete (%d bytes)", path, fi.Size())
			}
			return nil
		})
		if _, err := os.Stat(filepath.Join(src, srcPath)); err != nil {
			t.Fatalf("the source lost %s: %v", srcPath, err)
		}
	}
	// Free space: the big file resumes and completes.
	os.Remove(filler)
	os.RemoveAll(filepath.Join(disk, "small"))
	p := &Pull{Src: RootSource{mustRoot(t, src)}, SrcPath: "data/big.bin", SrcName: "big.bin", Dst: mustRoot(t, disk), DstPath: "."}
	got, err := p.Run(context.Background())
	if err != nil {
		t.Fatalf("copy after freeing space: %v", err)
	}
	if got.Sent >= 6*folders.BlockSize {
		t.Errorf("the resumed copy sent %d bytes: the blocks written before the disk filled were sent again", got.Sent)
	}
	a, _ := os.ReadFile(filepath.Join(src, "data", "big.bin"))
	b, _ := os.ReadFile(filepath.Join(disk, "big.bin"))
	if string(a) != string(b) {
		t.Fatal("the resumed file differs from the source")
	}
}
