package copies

import (
	"context"
	"fmt"

	"github.com/labpool/labpool/node/folders"
)

// listing takes the source's tree item by item as the source lists it:
// directories and links are made at once, the small files the receiver
// lacks go to the bundle fetchers as soon as a bundle is full, and larger
// files wait for the end of the listing. On a tree of many small files the
// copy is then under way before the source has finished listing it.
type listing struct {
	p      *Pull
	final  string                             // where the copy goes
	target string                             // where it is written until complete (see stage.go)
	have   <-chan map[string]folders.FileMeta // the destination's index, taken at the top
	small  *smallFetch                        // started with the first bundle
	batch  []folders.FileMeta                 // the bundle being filled
	size   int64                              // its bytes
	dirs   []folders.FileMeta                 // Rel is the source's
	big    []folders.FileMeta                 // files of more than one block, for after
	err    error                              // what ended the listing here (not at the source)
}

// list lists the source's tree into final (have brings the destination's
// index) and waits for its small files; the listing it returns holds the
// directories and the larger files still to do.
func (p *Pull) list(ctx context.Context, final string, have <-chan map[string]folders.FileMeta) (*listing, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l := &listing{p: p, final: final, target: final, have: have}
	err := p.Src.Walk(ctx, p.SrcPath, func(it folders.FileMeta) error {
		if l.err = l.add(ctx, cancel, it); l.err != nil {
			return l.err
		}
		return nil
	})
	switch {
	case l.err != nil:
		cancel(l.err)
	case err != nil:
		cancel(fmt.Errorf("list the source: %w", err))
	case len(l.batch) > 0:
		l.flush(ctx, cancel)
	}
	if l.have != nil { // the source listed nothing, not even its top
		p.have = <-l.have
	}
	l.small.wait()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx) // the first failure, of the listing or of a fetcher
	}
	return l, nil
}

// add takes one item of the listing.
func (l *listing) add(ctx context.Context, cancel context.CancelCauseFunc, it folders.FileMeta) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := l.p
	if l.have != nil { // the top, listed first
		p.have, l.have = <-l.have, nil
		t, err := p.stage(l.final, it)
		if err != nil {
			return err
		}
		l.target = t
	}
	if _, err := folders.CleanPath(it.Rel); err != nil && it.Rel != "" {
		return fmt.Errorf("cannot copy %q here: %w", it.Rel, err)
	}
	if !it.Dir && it.Link == "" {
		p.progress.Lock()
		p.progress.p.Bytes += it.Size
		p.progress.p.Files++
		p.progress.Unlock()
	}
	name := join(l.target, it.Rel)
	switch {
	case it.Small():
		if p.unchanged(it) {
			p.done.Add(it.Size)
			p.fileDone()
			return nil
		}
		if len(l.batch) >= bundleFiles || l.size+it.Size > bundleBytes {
			if !l.flush(ctx, cancel) {
				return context.Cause(ctx)
			}
		}
		l.batch = append(l.batch, it)
		l.size += it.Size
	case it.Dir:
		if h, ok := p.have[it.Rel]; !ok || !h.Dir {
			if err := p.Dst.MkdirAll(name, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
			p.changed.Store(true)
		}
		l.dirs = append(l.dirs, it)
	case it.Link != "":
		if p.have[it.Rel].Link == it.Link {
			return nil // the same link is there
		}
		p.Dst.Remove(name)
		if err := p.Dst.Symlink(it.Link, name); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
		p.changed.Store(true)
	default:
		l.big = append(l.big, it)
	}
	return nil
}

// flush hands the bundle filled so far to the fetchers, starting them at
// the first; false once ctx is done.
func (l *listing) flush(ctx context.Context, cancel context.CancelCauseFunc) bool {
	if l.small == nil {
		l.small = l.p.fetchSmall(ctx, cancel, l.target)
	}
	ok := l.small.send(ctx, l.batch)
	l.batch, l.size = nil, 0
	return ok
}
