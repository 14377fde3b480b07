package copies

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/labpool/labpool/node/folders"
)

// Bundles: files of one block at most cross many to a request.
const (
	bundleFiles = 256                   // files a bundle at most
	bundleBytes = 8 * folders.BlockSize // bytes a bundle at most
)

// smallFetch brings the small files the receiver lacks in bundles, over
// Pull.Streams requests at a time, as the listing hands them over.
type smallFetch struct {
	work chan []folders.FileMeta
	wg   sync.WaitGroup
}

// fetchSmall starts the fetchers of bundles into target (the tree's
// directory at the destination, or its staging directory). A fetcher that
// fails cancels ctx with its error as the cause.
func (p *Pull) fetchSmall(ctx context.Context, cancel context.CancelCauseFunc, target string) *smallFetch {
	f := &smallFetch{work: make(chan []folders.FileMeta)}
	for range p.Streams {
		f.wg.Go(func() {
			for b := range f.work {
				left := b // the files not yet in place, in the batch's order
				err := p.retry(ctx, func(progress func()) (err error) {
					left, err = p.bundle(ctx, target, left, progress)
					return err
				})
				if err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	return f
}

// send hands a batch to a fetcher; false once ctx is done.
func (f *smallFetch) send(ctx context.Context, batch []folders.FileMeta) bool {
	select {
	case f.work <- batch:
		return true
	case <-ctx.Done():
		return false
	}
}

// wait ends the work and waits for the fetchers; f may be nil.
func (f *smallFetch) wait() {
	if f != nil {
		close(f.work)
		f.wg.Wait()
	}
}

// bundle fetches one batch of small files and puts each in place; it
// returns those it did not (all, or none when err is nil).
func (p *Pull) bundle(ctx context.Context, target string, batch []folders.FileMeta, progress func()) (left []folders.FileMeta, err error) {
	paths := make([]string, len(batch))
	byPath := make(map[string]folders.FileMeta, len(batch))
	for i, m := range batch {
		paths[i] = join(p.SrcPath, m.Rel)
		byPath[paths[i]] = m
	}
	rc, err := p.open(ctx, func(ctx context.Context) (io.ReadCloser, error) { return p.Src.Bundle(ctx, paths) })
	if err != nil {
		return batch, fmt.Errorf("read files at the source: %w", err)
	}
	defer rc.Close()
	dirs := folders.NewDirRoots(p.Dst)
	defer dirs.Close()
	got := 0
	put := make(map[string]bool, len(batch))
	err = folders.ReadBundle(rc, func(item folders.BundleItem, data []byte) error {
		m, ok := byPath[item.Path]
		if !ok {
			return fmt.Errorf("the source sent %q, which was not asked for", item.Path)
		}
		if item.Error != "" {
			return fmt.Errorf("read %s at the source: %s", item.Path, item.Error)
		}
		if folders.HexSum(data) != item.Sum {
			return fmt.Errorf("%s arrived damaged", item.Path)
		}
		got++
		write := dirs.Put
		if p.staged {
			write = dirs.PutNew
		}
		if err := write(join(target, m.Rel), data, m); err != nil {
			return err
		}
		put[item.Path] = true
		progress()
		p.changed.Store(true)
		p.sent.Add(int64(len(data)))
		p.done.Add(int64(len(data)))
		p.fileDone()
		return nil
	})
	if err != nil {
		for i, m := range batch {
			if !put[paths[i]] {
				left = append(left, m)
			}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) { // not a refusal: the stream broke off
			err = receiveError(fmt.Sprintf("a bundle of %d files", len(batch)), err)
		}
		return left, err
	}
	if got != len(batch) {
		return nil, fmt.Errorf("the source sent %d of %d files", got, len(batch))
	}
	return nil, nil
}
