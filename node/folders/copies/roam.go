package copies

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// A copy outlives a change of network under way (a laptop that roams to
// another address, a cable moved): its connections then go quiet rather
// than fail, since nothing tells TCP that the address they were made from
// is gone. So each request for a file's blocks, or for a bundle of small
// files, is watched: a stream that brings no byte for Pull.Stall is
// dropped and asked again (from the first block not yet received, over a
// new connection), as are the requests the source does not answer after
// that (the new address may not be there yet), until Pull.Lost passes
// without progress. A source that stops in the middle of a stream, or
// does not answer while nothing went quiet (its agent was killed, its
// machine refuses), fails the copy at once; copying again resumes it.

// Defaults of Pull.Stall and Pull.Lost.
const (
	DefaultStall = 10 * time.Second
	DefaultLost  = 2 * time.Minute
)

// errStalled means a stream from the source brought nothing for Pull.Stall.
var errStalled = errors.New("the sending machine went quiet")

// idleCloser is a Source whose idle connections can be dropped, so that
// a request asked again does not ride one made from an address that is
// gone.
type idleCloser interface{ CloseIdleConnections() }

// open starts a request of the source with get, watched for stalls: the
// request and then each Read of its stream end with errStalled once they
// wait Pull.Stall for bytes.
func (p *Pull) open(ctx context.Context, get func(context.Context) (io.ReadCloser, error)) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &stallReader{cancel: cancel, stall: p.Stall}
	t := time.AfterFunc(s.stall, s.fire)
	rc, err := get(ctx)
	t.Stop()
	if err != nil {
		cancel()
		return nil, s.cause(err)
	}
	s.rc = rc
	return s, nil
}

// stallReader reads a stream of the source, cancelling its request when
// a Read waits longer than stall.
type stallReader struct {
	rc      io.ReadCloser
	cancel  context.CancelFunc
	stall   time.Duration
	stalled atomic.Bool
}

func (s *stallReader) fire() {
	s.stalled.Store(true)
	s.cancel()
}

func (s *stallReader) cause(err error) error {
	if s.stalled.Load() {
		return errStalled
	}
	return err
}

func (s *stallReader) Read(b []byte) (int, error) {
	t := time.AfterFunc(s.stall, s.fire)
	n, err := s.rc.Read(b)
	t.Stop()
	if err != nil {
		err = s.cause(err)
	}
	return n, err
}

func (s *stallReader) Close() error {
	err := s.rc.Close()
	s.cancel()
	return err
}

// lostNetwork reports whether err, in a stretch without progress that
// began with a stream gone quiet, means the network is still lost (a
// stream quiet again, a request with no answer), so the work may be asked
// for again, rather than a refusal or a stream cut at the source.
func lostNetwork(err error, quiet bool) bool {
	return errors.Is(err, errStalled) || (quiet && errors.Is(err, folders.ErrNoAnswer))
}

// retry runs work until it succeeds, fails other than by a lost network,
// or loses the network for Pull.Lost since its last progress (work calls
// the progress func it is given whenever it received something). Between
// tries it waits a second, then two, up to five.
func (p *Pull) retry(ctx context.Context, work func(progress func()) error) error {
	last := time.Now()
	wait := time.Second
	quiet := false // a stream went quiet since the last progress
	for {
		err := work(func() { last, wait, quiet = time.Now(), time.Second, false })
		if err == nil || ctx.Err() != nil || !lostNetwork(err, quiet) || time.Since(last) > p.Lost {
			return err
		}
		quiet = true
		if c, ok := p.Src.(idleCloser); ok {
			c.CloseIdleConnections()
		}
		p.retries.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}
