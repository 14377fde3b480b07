package copies_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
)

// errCut stands for a connection reset under a stream the cut was reading.
var errCut = errors.New("connection cut by the test")

// cutDialer is a copies.Dialer that counts the bytes of the responses its
// machine reads and, once armed, holds every stream still once they pass
// the cut point, until the test has interrupted the copy: then a stream
// opened before the cut fails, as over a connection that was reset.
type cutDialer struct {
	m *machine

	mu      sync.Mutex    // guards the fields below
	at      int64         // the cut point, in bytes read since armed; 0: not armed
	read    int64         // bytes read since armed
	epoch   int           // counts cuts; a stream of an older epoch fails
	reached chan struct{} // closed when read passes at
	release chan struct{} // closed once the test has interrupted the copy
}

// arm sets the next cut at bytes from now; reached is closed at the cut.
func (d *cutDialer) arm(at int64) (reached <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at, d.read = at, 0
	d.reached, d.release = make(chan struct{}), make(chan struct{})
	return d.reached
}

// cut lets the streams held at the cut point go on, failing.
func (d *cutDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.epoch++
	d.at = 0
	close(d.release)
}

// counted returns the bytes read since the last arm.
func (d *cutDialer) counted() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.read
}

func (d *cutDialer) NodeDataClient(id string) (*http.Client, error) {
	hc, err := d.m.NodeDataClient(id)
	if err != nil {
		return nil, err
	}
	inner := hc.Transport
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		resp, err := inner.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		resp.Body = &cutBody{rc: resp.Body, d: d, ctx: r.Context(), epoch: d.epoch}
		d.mu.Unlock()
		return resp, nil
	})}, nil
}

// cutBody is one response read through a cutDialer.
type cutBody struct {
	rc    io.ReadCloser
	d     *cutDialer
	ctx   context.Context
	epoch int
}

func (b *cutBody) Read(p []byte) (int, error) {
	d := b.d
	d.mu.Lock()
	if b.epoch != d.epoch {
		d.mu.Unlock()
		return 0, errCut
	}
	if d.at > 0 && d.read >= d.at {
		release := d.release
		d.mu.Unlock()
		select {
		case <-release:
			return 0, errCut
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
	}
	d.mu.Unlock()
	n, err := b.rc.Read(p)
	d.mu.Lock()
	d.read += int64(n)
	if d.at > 0 && d.read >= d.at && d.read-int64(n) < d.at {
		close(d.reached)
	}
	d.mu.Unlock()
	return n, err
}

func (b *cutBody) Close() error { return b.rc.Close() }

// startVia runs a new Receiver on m, as start does, whose bulk bytes come
// through d; a stream that breaks fails the copy at once (short Stall).
func (m *machine) startVia(d copies.Dialer) {
	changed := make(chan string, 1024)
	m.changed = changed
	cfg := copies.DefaultConfig()
	cfg.Self = m.id
	signer := folders.Signer{Key: m.priv.Public().(ed25519.PublicKey), Sign: func(b []byte) []byte { return ed25519.Sign(m.priv, b) }}
	m.rcv.Store(copies.New(cfg, copies.Deps{Folders: removals{m.reg, m.removed}, Store: m.store, Dialer: d, Members: m, Signer: signer,
		Changed: func(_ context.Context, folder string) {
			select {
			case changed <- folder:
			default:
			}
		}}))
	ctx, cancel := context.WithCancel(context.Background())
	m.stop, m.runErr = cancel, make(chan error, 1)
	rcv := m.rcv.Load()
	go func() { m.runErr <- rcv.Run(ctx) }()
	m.lab.t.Cleanup(m.halt)
}

// finalWatch fails when the file at path appears while it must not, or
// with other bytes than want.
type finalWatch struct {
	path    string
	want    [32]byte
	allowed atomic.Bool // the copy may have ended
	stop    chan struct{}
	done    chan error
}

func watchFinal(path string, want [32]byte) *finalWatch {
	w := &finalWatch{path: path, want: want, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		for {
			select {
			case <-w.stop:
				w.done <- nil
				return
			default:
			}
			if _, err := os.Stat(path); err == nil {
				if !w.allowed.Load() {
					w.done <- fmt.Errorf("%s appeared before the copy was complete", filepath.Base(path))
					return
				}
				if sum, err := sha256File(path); err != nil || sum != want {
					w.done <- fmt.Errorf("%s appeared with other bytes (%v)", filepath.Base(path), err)
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return w
}

func (w *finalWatch) end() error {
	close(w.stop)
	return <-w.done
}

func sha256File(path string) ([32]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return [32]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [32]byte{}, err
	}
	return [32]byte(h.Sum(nil)), nil
}

// TestInterruptedCopiesResume (T19) interrupts a copy of a 24 MiB file
// between two machines over loopback 50 times (LABPOOL_INTERRUPTS), at a
// random point between 2 and 20 MiB: one time in two the sender's
// connections are cut (its server closes them; the streams read through
// them fail), the other the receiver is restarted (its Receiver's Run
// ends under the copy and a new one starts). Each time, copying again
// resumes from the partial file: it sends no more than what the cut left
// plus a block per stream, and the file that then appears has the
// source's SHA-256. Nothing appears under the final name before the copy
// is complete. LABPOOL_INTERRUPT_SEED replays a run's cut points.
func TestInterruptedCopiesResume(t *testing.T) {
	if testing.Short() {
		t.Skip("50 copies of 24 MiB")
	}
	rounds := 50
	if v, err := strconv.Atoi(os.Getenv("LABPOOL_INTERRUPTS")); err == nil && v > 0 {
		rounds = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("LABPOOL_INTERRUPT_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d interruptions, LABPOOL_INTERRUPT_SEED=%d", rounds, seed)
	rng := mrand.New(mrand.NewPCG(seed, 5))

	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	const size = 24 * folders.BlockSize
	data := make([]byte, size)
	rand.Read(data)
	src := gpu1.share(t, "data", false, nil)
	if err := os.WriteFile(filepath.Join(src, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	scratch := gpu2.share(t, "scratch", true, nil)
	final := filepath.Join(scratch, "big.bin")
	d := &cutDialer{m: gpu2}
	gpu2.halt()
	gpu2.startVia(d)
	const slack = 4*folders.BlockSize + 64<<10 // a block per stream, and the frames' headers
	req := copies.Request{Src: "gpu1:data/big.bin", Dst: "gpu2:scratch/"}

	var sent, left int64
	for i := range rounds {
		restart := i%2 == 1
		at := int64(2*folders.BlockSize + rng.IntN(18*folders.BlockSize))
		w := watchFinal(final, want)
		reached := d.arm(at)
		tr, err := laptop.rcv.Load().Copy(context.Background(), req)
		if err != nil {
			t.Fatalf("round %d: copy: %v", i, err)
		}
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the copy never read %d bytes (read %d)", i, at, d.counted())
		}
		got := d.counted()
		if restart {
			gpu2.halt() // ends the copy; returns once its goroutines are gone
			d.cut()
			gpu2.startVia(d)
		} else {
			gpu1.srv.CloseClientConnections()
			d.cut()
			if end := waitFor(t, gpu2, tr.ID, 10*time.Second); end.State != "failed" {
				t.Fatalf("round %d: the cut copy ended %+v; want failed", i, end)
			}
		}
		if _, err := os.Stat(final); !os.IsNotExist(err) {
			t.Fatalf("round %d: %s exists after the interruption (%v)", i, filepath.Base(final), err)
		}
		w.allowed.Store(true)
		again, err := laptop.rcv.Load().Copy(context.Background(), req)
		if err != nil {
			t.Fatalf("round %d: copy again: %v", i, err)
		}
		end := waitFor(t, gpu2, again.ID, 30*time.Second)
		if err := w.end(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if end.State != "done" {
			t.Fatalf("round %d: the resumed copy ended %+v", i, end)
		}
		if sum, err := sha256File(final); err != nil || sum != want {
			t.Fatalf("round %d: the copied file's SHA-256 differs from the source's (%v)", i, err)
		}
		if end.Progress.Sent > size-got+slack {
			t.Fatalf("round %d (restart %v): %d bytes read before the cut, the resumed copy sent %d; want at most %d",
				i, restart, got, end.Progress.Sent, size-got+slack)
		}
		sent, left = sent+end.Progress.Sent, left+size-got
		if left, _ := filepath.Glob(filepath.Join(scratch, folders.PartialPrefix+"*")); len(left) > 0 {
			t.Fatalf("round %d: partial files left: %v", i, left)
		}
		if err := os.Remove(final); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d interruptions resumed: the resumed copies sent %d MiB for the %d MiB the cuts left", rounds, sent>>20, left>>20)
	if bytes.Equal(data, make([]byte, size)) {
		t.Fatal("no random data: the copies proved nothing")
	}
}
