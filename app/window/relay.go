package window

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"
)

// batch is what a stream holds between two writes to the page.
type batch interface {
	// fill reads the daemon's reply into the batch until it ends, calling
	// ready after each addition.
	fill(r io.Reader, ready func()) error
	// take returns what is pending, in the form the page reads, and
	// empties the batch.
	take() []byte
	// close wakes a fill waiting for room; fill returns once the reply is
	// closed too.
	close()
}

// relay copies a streamed reply from body to the page through b: the first
// piece as soon as it arrives, then at most one write per every, each with
// all that b holds. With keepalive > 0, an SSE comment goes out that often.
// It returns when the reply ends (nil), ctx ends, or the page stops reading;
// the goroutine that reads body has returned by then.
func relay(ctx context.Context, page io.Writer, body io.ReadCloser, b batch, every, keepalive time.Duration) error {
	ready := make(chan struct{}, 1)
	filled := make(chan error, 1)
	var wg sync.WaitGroup
	defer func() {
		b.close()
		body.Close()
		wg.Wait()
	}()
	wg.Go(func() {
		filled <- b.fill(body, func() {
			select {
			case ready <- struct{}{}:
			default:
			}
		})
	})
	var keep <-chan time.Time
	if keepalive > 0 {
		t := time.NewTicker(keepalive)
		defer t.Stop()
		keep = t.C
	}
	wait := time.NewTimer(time.Hour) // armed for the next write allowed
	wait.Stop()
	defer wait.Stop()
	var waiting bool // something waits for wait
	var next time.Time
	send := func() error {
		p := b.take()
		if len(p) == 0 {
			return nil
		}
		next = time.Now().Add(every)
		_, err := page.Write(p)
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ready:
			if d := time.Until(next); d > 0 {
				if !waiting {
					wait.Reset(d)
					waiting = true
				}
				continue
			}
			if err := send(); err != nil {
				return err
			}
		case <-wait.C:
			waiting = false
			if err := send(); err != nil {
				return err
			}
		case <-keep:
			if _, err := io.WriteString(page, ": keepalive\n\n"); err != nil {
				return err
			}
		case err := <-filled:
			if werr := send(); werr != nil {
				return werr
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// maxText bounds the text a stream holds for a page that reads slowly: the
// daemon's reply waits meanwhile.
const maxText = 1 << 20

// text is the batch of a byte stream (a log): everything since the last
// write, in order.
type text struct {
	mu     sync.Mutex // guards the fields below
	buf    bytes.Buffer
	closed bool
	room   *sync.Cond // signalled when buf is taken or the batch closed
}

func (t *text) fill(r io.Reader, ready func()) error {
	t.mu.Lock()
	t.room = sync.NewCond(&t.mu)
	t.mu.Unlock()
	p := make([]byte, 32<<10)
	for {
		n, err := r.Read(p)
		if n > 0 {
			t.mu.Lock()
			for t.buf.Len() >= maxText && !t.closed {
				t.room.Wait()
			}
			t.buf.Write(p[:n])
			t.mu.Unlock()
			ready()
		}
		if err != nil {
			return err
		}
	}
}

func (t *text) take() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := bytes.Clone(t.buf.Bytes())
	t.buf.Reset()
	if t.room != nil {
		t.room.Broadcast()
	}
	return p
}

func (t *text) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.room != nil {
		t.room.Broadcast()
	}
}
