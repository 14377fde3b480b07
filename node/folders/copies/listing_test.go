package copies

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// slowLister lists a tree and, once it has listed half of it, waits for
// the receiver to ask for a bundle before it lists the rest: a receiver
// that waits for the whole listing first never asks.
type slowLister struct {
	RootSource
	asked     chan struct{}
	once      sync.Once
	waited    bool // a bundle was asked for before the listing ended
	afterHalf int
}

func (s *slowLister) Walk(ctx context.Context, p string, emit func(folders.FileMeta) error) error {
	n := 0
	return s.RootSource.Walk(ctx, p, func(it folders.FileMeta) error {
		if n++; n == s.afterHalf {
			select {
			case <-s.asked:
				s.waited = true
			case <-time.After(10 * time.Second): // only a receiver that waits for the end gets here
			}
		}
		return emit(it)
	})
}

func (s *slowLister) Bundle(ctx context.Context, paths []string) (io.ReadCloser, error) {
	s.once.Do(func() { close(s.asked) })
	return s.RootSource.Bundle(ctx, paths)
}

// TestBundlesWhileListing: the small files of a tree start crossing while
// the source is still listing it.
func TestBundlesWhileListing(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	mt := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range 2 * bundleFiles {
		write(t, filepath.Join(src, "top", fmt.Sprintf("d%d", i/100), fmt.Sprintf("f%03d", i)), randBytes(100), 0o644, mt)
	}
	s := &slowLister{RootSource: RootSource{mustRoot(t, src)}, asked: make(chan struct{}), afterHalf: bundleFiles + 10}
	p := &Pull{Src: s, SrcPath: "top", SrcName: "top", Dst: mustRoot(t, dst), DstPath: "./"}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.waited {
		t.Error("no bundle was asked for before the listing ended")
	}
	sameTree(t, filepath.Join(src, "top"), filepath.Join(dst, "top"))
}

// brokenLister lists part of a tree, then fails as a listing cut short.
type brokenLister struct {
	RootSource
	after int
}

func (s brokenLister) Walk(ctx context.Context, p string, emit func(folders.FileMeta) error) error {
	n := 0
	err := s.RootSource.Walk(ctx, p, func(it folders.FileMeta) error {
		if n++; n > s.after {
			return errors.New("listing cut short: no end line")
		}
		return emit(it)
	})
	return err
}

// TestListingCutShort: a listing that breaks off after bundles have left
// fails the copy with the listing's error, leaves nothing under the final
// name, and the next copy completes.
func TestListingCutShort(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	mt := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range 3 * bundleFiles {
		write(t, filepath.Join(src, "top", fmt.Sprintf("f%04d", i)), randBytes(100), 0o644, mt)
	}
	p := &Pull{Src: brokenLister{RootSource{mustRoot(t, src)}, 2*bundleFiles + 5}, SrcPath: "top", SrcName: "top", Dst: mustRoot(t, dst), DstPath: "./"}
	_, err := p.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "list the source: listing cut short") {
		t.Fatalf("Run = %v; want the listing's error", err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "top")); !os.IsNotExist(err) {
		t.Fatalf("a copy whose listing broke off left something under the final name: %v", err)
	}
	pull(t, src, dst, "top", "./")
	sameTree(t, filepath.Join(src, "top"), filepath.Join(dst, "top"))
}
