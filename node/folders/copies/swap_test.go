package copies

import (
	"context"
	"github.com/labpool/labpool/node/folders"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSymlinkSwapDuringCopy: while copies write into a share, another
// process keeps swapping the directory they write into for a symlink to a
// directory outside the share. Copies may fail; nothing may ever land
// outside the share.
func TestSymlinkSwapDuringCopy(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	base := t.TempDir()
	share, outside, src := filepath.Join(base, "share"), filepath.Join(base, "outside"), filepath.Join(base, "src")
	os.MkdirAll(filepath.Join(share, "into"), 0o755)
	os.MkdirAll(outside, 0o755)
	mt := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, n := range []string{"a", "b", "c", "d"} {
		write(t, filepath.Join(src, "tree", n), randBytes(1000), 0o644, mt)
		write(t, filepath.Join(src, "tree", "sub", n), randBytes(1000), 0o644, mt)
	}
	write(t, filepath.Join(src, "tree", "big"), randBytes(3*folders.BlockSize), 0o644, mt)

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		into, real := filepath.Join(share, "into"), filepath.Join(share, "into.real")
		for {
			select {
			case <-stop:
				return
			default:
			}
			// into -> into.real, then a link in its place, then back.
			if os.Rename(into, real) == nil {
				os.Symlink(outside, into)
				swaps.Add(1)
				runtime.Gosched()
				os.Remove(into)
				os.Rename(real, into)
			}
			time.Sleep(time.Duration(swaps.Load()%4) * time.Millisecond) // some copies get through
		}
	})
	srcRoot := mustRoot(t, src)
	dst := mustRoot(t, share)
	var failed, ok int
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, dstPath := range []string{"into/", "into/sub/copy", "into/tree/sub/"} {
			p := &Pull{Src: RootSource{srcRoot}, SrcPath: "tree", SrcName: "tree", Dst: dst, DstPath: dstPath}
			if _, err := p.Run(context.Background()); err != nil {
				failed++
			} else {
				ok++
			}
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d swaps; %d copies failed, %d completed", swaps.Load(), failed, ok)
	if swaps.Load() < 10 || failed == 0 {
		t.Fatalf("%d swaps, %d failed copies: the test did not race", swaps.Load(), failed)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("a copy wrote outside the share: %v", entries)
	}
}
