package copies

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// flakySource is a source whose first streams break as a network does:
// the requests for blocks or bundles follow script, one word each, then
// answer well: "quiet" sends keep bytes and then nothing (until its
// request is cancelled), "cut" sends keep bytes and stops (the source's
// agent killed), "no answer" gets none.
type flakySource struct {
	RootSource
	script []string
	keep   int64
	asked  atomic.Int32
}

func (s *flakySource) Blocks(ctx context.Context, p string, first, n int) (io.ReadCloser, error) {
	rc, _ := s.RootSource.Blocks(ctx, p, first, n)
	return s.flake(ctx, rc)
}

func (s *flakySource) Bundle(ctx context.Context, paths []string) (io.ReadCloser, error) {
	rc, _ := s.RootSource.Bundle(ctx, paths)
	return s.flake(ctx, rc)
}

func (s *flakySource) flake(ctx context.Context, rc io.ReadCloser) (io.ReadCloser, error) {
	i := int(s.asked.Add(1)) - 1
	if i >= len(s.script) {
		return rc, nil
	}
	switch s.script[i] {
	case "no answer":
		rc.Close()
		return nil, fmt.Errorf("%w: connect: network is unreachable", folders.ErrNoAnswer)
	case "cut":
		return struct {
			io.Reader
			io.Closer
		}{io.MultiReader(io.LimitReader(rc, s.keep), errReader{io.ErrUnexpectedEOF}), rc}, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, s.keep), quiet{ctx}), rc}, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// quiet reads nothing until ctx ends, as a connection whose address is gone.
type quiet struct{ ctx context.Context }

func (q quiet) Read([]byte) (int, error) {
	<-q.ctx.Done()
	return 0, q.ctx.Err()
}

// TestPullOutlivesLostNetwork: streams that go quiet, and the requests
// with no answer after them, are asked again from the first block not yet
// received, and the copy completes with no block received twice; a stream
// cut at the source, or a request with no answer while nothing went
// quiet, fails the copy at once.
func TestPullOutlivesLostNetwork(t *testing.T) {
	src := t.TempDir()
	big := make([]byte, 40*folders.BlockSize+123)
	rand.Read(big)
	os.MkdirAll(filepath.Join(src, "top", "small"), 0o755)
	os.WriteFile(filepath.Join(src, "top", "big.bin"), big, 0o644)
	var small int64
	for i := range 300 {
		b := make([]byte, 100+i)
		rand.Read(b)
		small += int64(len(b))
		os.WriteFile(filepath.Join(src, "top", "small", fmt.Sprintf("f%03d", i)), b, 0o644)
	}
	for _, tt := range []struct {
		script  string
		wantErr string
	}{
		{"quiet,quiet,quiet", ""},
		{"quiet,no answer,no answer", ""},
		{"cut", "stopped in the middle"},
		{"no answer", "did not answer"},
	} {
		t.Run(tt.script, func(t *testing.T) {
			dst := t.TempDir()
			s := &flakySource{RootSource: RootSource{mustRoot(t, src)}, script: strings.Split(tt.script, ","), keep: 5*folders.BlockSize/2 + 7}
			p := &Pull{Src: s, SrcPath: "top", SrcName: "top", Dst: mustRoot(t, dst), DstPath: ".", Stall: 100 * time.Millisecond, Streams: 1} // one stream: the script in order
			got, err := p.Run(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || p.Retries() != 0 {
					t.Fatalf("Run = %v after %d retries; want %q at once", err, p.Retries(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if p.Retries() < 3 {
				t.Errorf("%d requests asked again; want at least 3", p.Retries())
			}
			if want := int64(len(big)) + small; got.Sent != want || got.Done != want {
				t.Errorf("sent %d, done %d; want %d each (a block received twice, or one missing)", got.Sent, got.Done, want)
			}
			if b, _ := os.ReadFile(filepath.Join(dst, "top", "big.bin")); !bytes.Equal(b, big) {
				t.Error("big.bin differs from the source")
			}
			if n, _ := os.ReadDir(filepath.Join(dst, "top", "small")); len(n) != 300 {
				t.Errorf("%d small files; want 300", len(n))
			}
		})
	}
}

// TestPullGivesUpOnLostSource: a source not heard for Lost fails the copy
// with the cause.
func TestPullGivesUpOnLostSource(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	b := make([]byte, 3*folders.BlockSize)
	os.WriteFile(filepath.Join(src, "f"), b, 0o644)
	s := &flakySource{RootSource: RootSource{mustRoot(t, src)}, script: strings.Split(strings.Repeat("quiet,", 1000), ",")}
	p := &Pull{Src: s, SrcPath: "f", SrcName: "f", Dst: mustRoot(t, dst), DstPath: "f", Stall: 50 * time.Millisecond, Lost: 10 * time.Millisecond}
	if _, err := p.Run(context.Background()); !errors.Is(err, errStalled) {
		t.Fatalf("Run = %v; want errStalled", err)
	}
}
