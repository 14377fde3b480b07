//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
)

// TestCopyResumes kills the sender, then the receiver, in the middle of a
// 1 GiB machine-to-machine copy: each resumed copy goes on from its partial
// file, the result matches, and an interruption costs at most one block per
// stream in bytes sent again.
func TestCopyResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB copy: skipped in -short mode")
	}
	l := newLAN(t, "src", "dst", "laptop")
	src, dst, laptop := l.host("src"), l.host("dst"), l.host("laptop")
	for _, h := range l.hosts {
		h.agent()
		h.waitDaemon()
	}
	joinAll(t, src, dst, laptop)
	waitFor(t, 20*time.Second, "dst follows src", func() error { return liveNodes(dst, "src") })
	waitFor(t, 20*time.Second, "laptop follows both", func() error { return liveNodes(laptop, "src", "dst") })
	base := t.TempDir()
	data, scratch := filepath.Join(base, "data"), filepath.Join(base, "scratch")
	os.MkdirAll(data, 0o755)
	os.MkdirAll(scratch, 0o755)
	const size = 1 << 30
	want := writeRandom(t, filepath.Join(data, "big.bin"), size)
	mustCLI(t, src, "share", "data", data)
	mustCLI(t, dst, "share", "--rw", "scratch", scratch)
	partial := filepath.Join(scratch, ".labpool-partial.big.bin")
	const slack = 4 * folders.BlockSize // one block per stream

	// copy starts the copy and waits until it ends or until the partial
	// file holds at least upto bytes; it returns the transfer as last seen.
	copyUntil := func(upto int64) app.Transfer {
		t.Helper()
		c := laptop.client()
		tr, err := c.Copy(context.Background(), app.CopyRequest{Src: "src:data/big.bin", Dst: "dst:scratch/"})
		if err != nil {
			t.Fatal(err)
		}
		for tr.State == "running" && (upto == 0 || tr.Progress.Sent < upto) {
			time.Sleep(20 * time.Millisecond) // a copy moves about 10 MB in that time
			if tr, err = c.Transfer(context.Background(), tr.Node, tr.ID, 0); err != nil {
				t.Fatal(err)
			}
		}
		return tr
	}

	// 1. Kill the sender a third of the way.
	tr := copyUntil(size / 3)
	src.kill()
	sentBefore := tr.Progress.Sent
	var failed app.Transfer
	waitFor(t, 20*time.Second, "the copy to fail", func() error {
		var err error
		failed, err = laptop.client().Transfer(context.Background(), tr.Node, tr.ID, 0)
		if err != nil || failed.State != "failed" {
			return fmt.Errorf("state %s %v", failed.State, err)
		}
		return nil
	})
	have1 := receivedBytes(t, partial)
	t.Logf("sender killed: %d MiB sent, %d MiB in the partial file (%s)", failed.Progress.Sent>>20, have1>>20, failed.Error)
	if sentBefore > have1+slack || failed.Progress.Sent > have1+slack {
		t.Errorf("%d bytes sent, only %d kept", failed.Progress.Sent, have1)
	}
	src.agent()
	src.waitDaemon()
	waitFor(t, 20*time.Second, "dst follows src again", func() error { return liveNodes(dst, "src") })

	// 2. Resume, and kill the receiver half way through what was left.
	copyUntil((size - have1) / 2)
	dst.kill()
	have2 := receivedBytes(t, partial)
	t.Logf("receiver killed: %d MiB in the partial file", have2>>20)
	if have2 <= have1 {
		t.Fatalf("the resumed copy made no progress: %d then %d bytes", have1, have2)
	}
	if have2 >= size-slack {
		t.Fatalf("the receiver was killed after the copy had all but ended (%d of %d bytes): the test proves nothing", have2, int64(size))
	}
	dst.agent()
	dst.waitDaemon()
	waitFor(t, 20*time.Second, "dst follows src again", func() error { return liveNodes(dst, "src") })
	waitFor(t, 20*time.Second, "the laptop sees dst again", func() error { return liveNodes(laptop, "dst") })

	// 3. Resume to the end.
	last := copyUntil(0)
	if last.State != "done" {
		t.Fatalf("last copy %s: %s", last.State, last.Error)
	}
	t.Logf("last copy sent %d MiB of %d MiB", last.Progress.Sent>>20, int64(size)>>20)
	if rest := int64(size) - have2; last.Progress.Sent > rest+slack {
		t.Errorf("resume sent %d bytes, %d were missing: more than one block per stream again", last.Progress.Sent, rest)
	}
	if got := fileSum(t, filepath.Join(scratch, "big.bin")); !bytes.Equal(got, want) {
		t.Error("the copied file differs from the source")
	}
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Error("the partial file is still there")
	}
}

// writeRandom writes n random bytes to path and returns their SHA-256.
func writeRandom(t testing.TB, path string, n int64) []byte {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, n); err != nil {
		t.Fatal(err)
	}
	return h.Sum(nil)
}

func fileSum(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return h.Sum(nil)
}

// receivedBytes counts the bytes of whole non-zero blocks in a partial file
// (the source is random, so a zero block was not received yet).
func receivedBytes(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("partial file: %v", err)
	}
	defer f.Close()
	buf := make([]byte, folders.BlockSize)
	zero := make([]byte, folders.BlockSize)
	var n int64
	for {
		k, err := io.ReadFull(f, buf)
		if k > 0 && !bytes.Equal(buf[:k], zero[:k]) {
			n += int64(k)
		}
		if err != nil {
			return n
		}
	}
}
