package copies

import (
	"context"
	"github.com/labpool/labpool/node/folders"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPlantedFifo: a fifo planted under the partial name of a small file
// makes its copy fail at once, instead of hanging on the open, and nothing
// appears under the final name.
func TestPlantedFifo(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "small"), []byte("data"), 0o644)
	if err := unix.Mkfifo(filepath.Join(dst, folders.PartialName("small")), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	rs, _ := os.OpenRoot(src)
	rd, _ := os.OpenRoot(dst)
	done := make(chan error, 1)
	go func() {
		p := &Pull{Src: RootSource{rs}, SrcPath: "small", SrcName: "small", Dst: rd, DstPath: "./"}
		_, err := p.Run(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the copy wrote through a fifo")
		}
		t.Logf("copy: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the copy hangs on a fifo planted under its partial name")
	}
	if _, err := os.Lstat(filepath.Join(dst, "small")); !os.IsNotExist(err) {
		t.Errorf("something is under the final name: %v", err)
	}
}
