package copies

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labpool/labpool/internal/procs"
	"github.com/labpool/labpool/node/folders"
)

// Source is the sending side of a copy: a shared folder of a member.
type Source interface {
	// Walk lists the tree at p, handing emit each item as it is listed
	// (see folders.WalkFunc); an error of emit ends it and is returned.
	Walk(ctx context.Context, p string, emit func(folders.FileMeta) error) error
	Sums(ctx context.Context, p string) (folders.Sums, error)
	Read(ctx context.Context, p string, off, n int64) (io.ReadCloser, error)
	// Bundle sends the small files paths in one stream (see WriteBundle).
	Bundle(ctx context.Context, paths []string) (io.ReadCloser, error)
	// Blocks sends n blocks of p from block first, each with its check
	// (a BlockCheck, or a BlockSum from a source before it), or marked as
	// zeros (see WriteBlocks).
	Blocks(ctx context.Context, p string, first, n int) (io.ReadCloser, error)
}

// Progress of a copy. Sent counts bytes that crossed the network; Done
// counts bytes in place at the receiver (sent, or found already there).
type Progress struct {
	Files     int   `json:"files"`
	FilesDone int   `json:"files_done"`
	Bytes     int64 `json:"bytes"`
	Done      int64 `json:"done"`
	Sent      int64 `json:"sent"`
}

// Pull copies SrcPath of Src into Dst, as `cp -r` would: into DstPath when
// that is an existing directory or ends in "/", else to DstPath itself.
// Only blocks the receiver lacks are fetched; a file appears under its
// final name only once complete and verified; an interrupted copy resumes
// from its partial file.
type Pull struct {
	Src        Source
	SrcPath    string // inside the source folder
	SrcName    string // the name the copied top takes (the folder's name for its top)
	Dst        *os.Root
	DstPath    string
	Streams    int            // parallel block requests (default 4)
	Stall      time.Duration  // a stream silent this long is asked again (default DefaultStall; see roam.go)
	Lost       time.Duration  // how long a source not heard is asked again (default DefaultLost)
	OnProgress func(Progress) // called often; must not block
	// Owner, when set, is the folder user of a share Dst is: what the copy
	// wrote is given to it (folders.FolderUser), so that the jobs that
	// mount the share read-write, which run as that user, can change it.
	Owner *folders.Owner

	progress struct {
		sync.Mutex
		p Progress
	}
	sent, done atomic.Int64
	retries    atomic.Int64                // requests asked again after a lost network
	changed    atomic.Bool                 // something was written at the destination
	have       map[string]folders.FileMeta // the destination's tree, by Rel, at the start
	staged     bool                        // the tree is written under its staging name (see stage.go)
}

// index lists the destination's tree at target, by Rel; empty where it
// does not exist or cannot be read (then everything is fetched).
func (p *Pull) index(target string) map[string]folders.FileMeta {
	items, err := folders.Walk(p.Dst, target)
	if err != nil {
		return nil
	}
	have := make(map[string]folders.FileMeta, len(items))
	for _, it := range items {
		have[it.Rel] = it
	}
	return have
}

// unchanged reports whether the destination already held m, judged as
// rsync does by size and modification time.
func (p *Pull) unchanged(m folders.FileMeta) bool {
	h, ok := p.have[m.Rel]
	return ok && !h.Dir && h.Link == "" && h.Size == m.Size && h.MTime.Equal(m.MTime)
}

// Run performs the copy, on every core (see procs). Small files cross
// while the source is still listing its tree (see listing.go); larger
// files once it has listed it all.
func (p *Pull) Run(ctx context.Context) (Progress, error) {
	defer procs.Acquire()() // hashing, TLS and the writers run in parallel
	if p.Streams <= 0 {
		p.Streams = 4
	}
	if p.Stall <= 0 {
		p.Stall = DefaultStall
	}
	if p.Lost <= 0 {
		p.Lost = DefaultLost
	}
	final, err := p.target()
	if err != nil {
		return Progress{}, err
	}
	// List what the destination holds while the source lists its tree:
	// one pass over each directory instead of a lookup per file.
	have := make(chan map[string]folders.FileMeta, 1)
	go func() { have <- p.index(final) }()
	l, err := p.list(ctx, final, have)
	if err != nil {
		return p.snapshot(), err
	}
	for _, it := range l.big {
		if err := p.file(ctx, join(p.SrcPath, it.Rel), join(l.target, it.Rel), it); err != nil {
			return p.snapshot(), err
		}
		p.fileDone()
	}
	if err := p.unstage(l.target, final); err != nil {
		return p.snapshot(), err
	}
	for i := len(l.dirs) - 1; i >= 0; i-- { // deepest first, so children do not touch a parent's time again
		d := l.dirs[i]
		if h := p.have[d.Rel]; !p.changed.Load() && h.Dir && h.Mode == d.Mode && h.MTime.Equal(d.MTime) {
			continue // nothing was written: the directory is as it was
		}
		name := join(final, d.Rel)
		p.Dst.Chmod(name, d.Mode)
		p.Dst.Chtimes(name, d.MTime, d.MTime)
	}
	if p.Owner != nil {
		if err := folders.ChownTree(p.Dst, final, *p.Owner); err != nil {
			return p.snapshot(), err
		}
	}
	return p.snapshot(), nil
}

// Retries counts the requests asked again after the network was lost.
func (p *Pull) Retries() int64 { return p.retries.Load() }

// Changed reports whether the copy wrote anything at the destination.
func (p *Pull) Changed() bool { return p.changed.Load() }

// target resolves where the copied top goes, following cp -r.
func (p *Pull) target() (string, error) {
	into := len(p.DstPath) > 0 && p.DstPath[len(p.DstPath)-1] == '/'
	dst, err := folders.CleanPath(p.DstPath)
	if err != nil {
		return "", err
	}
	if fi, err := p.Dst.Stat(dst); err == nil && fi.IsDir() {
		into = true
	} else if into {
		return "", fmt.Errorf("%s is not a directory", p.DstPath)
	}
	if into {
		// The name comes with the request: one plain element, or nothing.
		if c, err := folders.CleanPath(p.SrcName); err != nil || c != p.SrcName || c == "." || strings.Contains(c, "/") {
			return "", fmt.Errorf("%w: %q cannot name the copy", folders.ErrBadPath, p.SrcName)
		}
		return join(dst, p.SrcName), nil
	}
	if parent := path.Dir(dst); parent != "." {
		if fi, err := p.Dst.Stat(parent); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%s: no such directory at the destination", parent)
		}
	}
	return dst, nil
}

func (p *Pull) fileDone() {
	p.progress.Lock()
	p.progress.p.FilesDone++
	p.progress.Unlock()
	p.report()
}

func (p *Pull) snapshot() Progress {
	p.progress.Lock()
	defer p.progress.Unlock()
	s := p.progress.p
	s.Sent, s.Done = p.sent.Load(), p.done.Load()
	return s
}

func (p *Pull) report() {
	if p.OnProgress != nil {
		p.OnProgress(p.snapshot())
	}
}

// file brings one regular file to name.
func (p *Pull) file(ctx context.Context, src, name string, m folders.FileMeta) error {
	if p.unchanged(m) {
		p.done.Add(m.Size) // unchanged: same size and modification time
		p.report()
		return nil
	}
	partial := folders.PartialName(name)
	f, fresh, err := p.openPartial(partial, name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(m.Size); err != nil {
		return fmt.Errorf("size %s: %w", partial, err)
	}
	// A fresh file needs every block: they come with their hashes, in one
	// pass over the source. Otherwise the source's block hashes say which
	// blocks the receiver lacks.
	sums := folders.Sums{Size: m.Size}
	var need []int
	if fresh {
		for i := int64(0); i*folders.BlockSize < m.Size; i++ {
			need = append(need, int(i))
		}
	} else {
		if sums, err = p.Src.Sums(ctx, src); err != nil {
			return fmt.Errorf("hash %s at the source: %w", src, err)
		}
		if sums.Size != m.Size {
			return fmt.Errorf("%s changed at the source during the copy", src)
		}
		if need, err = p.missing(f, sums, false); err != nil {
			return err
		}
	}
	if err := p.fetch(ctx, src, f, sums, need); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return folders.WriteError(name, err)
	}
	if err := f.Chmod(m.Mode); err != nil {
		return err
	}
	f.Close()
	if err := p.Dst.Chtimes(partial, m.MTime, m.MTime); err != nil {
		return err
	}
	if err := p.Dst.Rename(partial, name); err != nil {
		return fmt.Errorf("put %s in place: %w", name, err)
	}
	p.changed.Store(true)
	return nil
}

// feed sends items to the workers reading work until ctx ends, then
// closes work.
func feed[T any](ctx context.Context, work chan<- T, items []T) {
	defer close(work)
	for _, it := range items {
		select {
		case work <- it:
		case <-ctx.Done():
			return
		}
	}
}

// join is rel under dir ("" is dir itself).
func join(dir, rel string) string {
	if rel == "" {
		return dir
	}
	return path.Join(dir, rel)
}

// receiveError explains a stream from the source that broke off.
func receiveError(name string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("receive %s: the sending machine stopped in the middle (%w)", name, err)
	}
	return fmt.Errorf("receive %s: %w", name, err)
}

// openPartial opens the partial file, resuming one left by an interrupted
// copy; a new one starts from the existing version of the file, if any, so
// its unchanged blocks need not be sent. fresh means it holds only zeros.
func (p *Pull) openPartial(partial, name string) (*os.File, bool, error) {
	if f, err := p.Dst.OpenFile(partial, os.O_RDWR, 0); err == nil {
		return f, false, nil
	}
	f, err := p.Dst.OpenFile(partial, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("create %s: %w", partial, err)
	}
	old, err := p.Dst.Open(name)
	if err != nil {
		return f, true, nil
	}
	defer old.Close()
	if fi, err := old.Stat(); err != nil || !fi.Mode().IsRegular() {
		return f, true, nil
	}
	if _, err := io.Copy(f, old); err != nil {
		f.Close()
		return nil, false, folders.WriteError(name, err)
	}
	return f, false, nil
}

// missing returns the blocks f lacks; in a fresh file only blocks that are
// not all zeros (holes of a sparse file stay holes).
func (p *Pull) missing(f *os.File, sums folders.Sums, fresh bool) ([]int, error) {
	var need []int
	buf := make([]byte, folders.BlockSize)
	for i, want := range sums.Blocks {
		n := blockLen(sums.Size, i)
		if fresh {
			if want != folders.ZeroSum(n) {
				need = append(need, i)
			} else {
				p.done.Add(int64(n))
			}
			continue
		}
		if _, err := f.ReadAt(buf[:n], int64(i)*folders.BlockSize); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if folders.HexSum(buf[:n]) == want {
			p.done.Add(int64(n))
			continue
		}
		need = append(need, i)
	}
	p.report()
	return need, nil
}

func blockLen(size int64, i int) int {
	return int(min(int64(folders.BlockSize), size-int64(i)*folders.BlockSize))
}

// run is a stretch of consecutive missing blocks.
type run struct{ first, n int }

func runs(need []int, max int) []run {
	var out []run
	for _, b := range need {
		if k := len(out) - 1; k >= 0 && out[k].first+out[k].n == b && out[k].n < max {
			out[k].n++
			continue
		}
		out = append(out, run{b, 1})
	}
	return out
}

// fetch fetches the needed blocks over several streams, verifying each.
func (p *Pull) fetch(ctx context.Context, src string, f *os.File, sums folders.Sums, need []int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := newBlockWriter(p, f, src, cancel)
	work := make(chan run)
	errc := make(chan error, p.Streams)
	var wg sync.WaitGroup
	for range p.Streams {
		wg.Go(func() {
			for r := range work {
				err := p.retry(ctx, func(progress func()) error { return p.fetchRun(ctx, src, w, sums, &r, progress) })
				if err != nil {
					errc <- err
					cancel()
					return
				}
			}
		})
	}
	feed(ctx, work, runs(need, 16))
	wg.Wait()
	if err := w.close(); err != nil {
		return err // the cause of any cancel seen by the streams
	}
	select {
	case err := <-errc:
		return err
	default:
		return ctx.Err()
	}
}

// blockWriter puts the blocks that the streams of one file receive on
// disk from a single goroutine. Writers to one file take turns on its
// inode lock, and several at once spend their time spinning on it; with one
// writer, the other streams go on receiving while a block is written.
type blockWriter struct {
	p      *Pull
	f      *os.File
	src    string
	cancel context.CancelFunc // stops the streams when a write fails
	writes chan blockWrite
	free   chan []byte // buffers for the streams, as the writer frees them
	done   chan struct{}
	err    error // the first failed write; read after done
}

type blockWrite struct {
	off int64
	buf []byte
}

func newBlockWriter(p *Pull, f *os.File, src string, cancel context.CancelFunc) *blockWriter {
	// One buffer a stream: a block received waits for the disk in its
	// stream's buffer, so an interruption loses at most one received block
	// a stream, as when each stream wrote its own.
	n := p.Streams
	w := &blockWriter{p: p, f: f, src: src, cancel: cancel, writes: make(chan blockWrite, n), free: make(chan []byte, n), done: make(chan struct{})}
	for range n {
		w.free <- make([]byte, folders.BlockSize)
	}
	go w.run()
	return w
}

// buffer waits for a free block buffer.
func (w *blockWriter) buffer(ctx context.Context) ([]byte, error) {
	select {
	case b := <-w.free:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// write queues buf (from buffer) to be written at off; the writer frees it.
func (w *blockWriter) write(ctx context.Context, off int64, buf []byte) error {
	select {
	case w.writes <- blockWrite{off, buf}:
		return nil
	case <-ctx.Done():
		w.release(buf)
		return ctx.Err()
	}
}

// release gives back a buffer that is not written.
func (w *blockWriter) release(buf []byte) { w.free <- buf[:cap(buf)] }

// readBlock reads the next n bytes of rc (a stream from src) into a free
// buffer; on failure the buffer is released.
func (w *blockWriter) readBlock(ctx context.Context, rc io.Reader, src string, n int) ([]byte, error) {
	buf, err := w.buffer(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(rc, buf[:n]); err != nil {
		w.release(buf)
		return nil, receiveError(src, err)
	}
	return buf, nil
}

func (w *blockWriter) run() {
	defer close(w.done)
	for b := range w.writes {
		if w.err == nil {
			if _, err := w.f.WriteAt(b.buf, b.off); err != nil {
				w.err = folders.WriteError(w.src, err)
				w.cancel()
			} else {
				startWriteback(w.f, b.off, int64(len(b.buf)))
				w.p.sent.Add(int64(len(b.buf)))
				w.p.done.Add(int64(len(b.buf)))
				w.p.report()
			}
		}
		w.release(b.buf)
	}
}

// close waits for the queued writes and returns the first failure.
func (w *blockWriter) close() error {
	close(w.writes)
	<-w.done
	return w.err
}

// fetchRun fetches the blocks of r, moving r past each one received
// (and calling progress), so that a run broken off is asked again from
// where it stopped.
func (p *Pull) fetchRun(ctx context.Context, src string, w *blockWriter, sums folders.Sums, r *run, progress func()) error {
	if sums.Blocks == nil {
		return p.fetchBlocks(ctx, src, w, sums.Size, r, progress)
	}
	off := int64(r.first) * folders.BlockSize
	end := min(sums.Size, int64(r.first+r.n)*folders.BlockSize)
	rc, err := p.open(ctx, func(ctx context.Context) (io.ReadCloser, error) { return p.Src.Read(ctx, src, off, end-off) })
	if err != nil {
		return fmt.Errorf("read %s at the source: %w", src, err)
	}
	defer rc.Close()
	for r.n > 0 {
		i := r.first
		n := blockLen(sums.Size, i)
		buf, err := w.readBlock(ctx, rc, src, n)
		if err != nil {
			return err
		}
		if folders.HexSum(buf[:n]) != sums.Blocks[i] {
			w.release(buf)
			return fmt.Errorf("%s changed at the source during the copy (block %d)", src, i)
		}
		if err := w.write(ctx, int64(i)*folders.BlockSize, buf[:n]); err != nil {
			return err
		}
		r.first, r.n = r.first+1, r.n-1
		progress()
	}
	return readEnd(src, rc)
}

// readEnd reads the end of a stream from src whose blocks were all read,
// so that its connection is kept for the next request.
func readEnd(src string, rc io.Reader) error {
	if err := folders.ReadEnd(rc); err != nil {
		return receiveError(src, err)
	}
	return nil
}

// RootSource is a Source over a local root (this machine's own folder, or
// a test's).
type RootSource struct{ Root *os.Root }

// Walk implements Source.
func (s RootSource) Walk(_ context.Context, p string, emit func(folders.FileMeta) error) error {
	return folders.WalkFunc(s.Root, p, emit)
}

// Sums implements Source.
func (s RootSource) Sums(_ context.Context, p string) (folders.Sums, error) {
	return folders.FileSums(s.Root, p)
}

// Bundle implements Source.
func (s RootSource) Bundle(_ context.Context, paths []string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(folders.WriteBundle(s.Root, paths, pw)) }()
	return pr, nil
}

// Blocks implements Source.
func (s RootSource) Blocks(_ context.Context, p string, first, n int) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(folders.WriteBlocks(s.Root, p, first, n, true, pw)) }()
	return pr, nil
}

// Read implements Source.
func (s RootSource) Read(_ context.Context, p string, off, n int64) (io.ReadCloser, error) {
	return folders.OpenRange(s.Root, p, off, n)
}

// fetchBlocks fetches a run of a fresh file as checked blocks; zero blocks
// stay holes.
func (p *Pull) fetchBlocks(ctx context.Context, src string, w *blockWriter, size int64, r *run, progress func()) error {
	rc, err := p.open(ctx, func(ctx context.Context) (io.ReadCloser, error) { return p.Src.Blocks(ctx, src, r.first, r.n) })
	if err != nil {
		return fmt.Errorf("read %s at the source: %w", src, err)
	}
	defer rc.Close()
	var head [1 + folders.SumSize]byte
	for ; r.n > 0; r.first, r.n = r.first+1, r.n-1 {
		i := r.first
		n := blockLen(size, i)
		if _, err := io.ReadFull(rc, head[:1]); err != nil {
			return receiveError(src, err)
		}
		var check []byte // after the kind
		switch head[0] {
		case folders.BlockZero:
			p.done.Add(int64(n))
			progress()
			continue
		case folders.BlockChecked:
			check = head[1:5]
		case folders.BlockData:
			check = head[1:]
		default:
			return fmt.Errorf("%s: block %d of an unknown kind %d", src, i, head[0])
		}
		if _, err := io.ReadFull(rc, check); err != nil {
			return receiveError(src, err)
		}
		buf, err := w.readBlock(ctx, rc, src, n)
		if err != nil {
			return err
		}
		if !blockIntact(head[0], check, buf[:n]) {
			w.release(buf)
			return fmt.Errorf("%s: block %d arrived damaged", src, i)
		}
		if err := w.write(ctx, int64(i)*folders.BlockSize, buf[:n]); err != nil {
			return err
		}
		progress()
	}
	return readEnd(src, rc)
}

// blockIntact reports whether block matches check, a BlockCheck or a
// BlockSum as kind says.
func blockIntact(kind byte, check, block []byte) bool {
	if kind == folders.BlockChecked {
		return binary.BigEndian.Uint32(check) == folders.BlockCheck(block)
	}
	return folders.BlockSum(block) == [folders.SumSize]byte(check)
}
