package copies_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
)

// TestCopyKeepsConnections: a copy's requests reuse the data path's
// connections. Each of 12 files of two blocks is one request for its
// blocks; a stream closed before its end closed its connection, and every
// request paid a new TCP (and, between machines, TLS) handshake, until the
// source's handshake budget ran out and the copy fell back to QUIC.
func TestCopyKeepsConnections(t *testing.T) {
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	files := map[string]string{}
	for i := range 12 {
		b := make([]byte, 2*folders.BlockSize)
		rand.Read(b)
		files[fmt.Sprintf("f%02d.bin", i)] = string(b)
	}
	gpu1.share(t, "data", false, files)
	gpu2.share(t, "scratch", true, nil)
	before := gpu1.conns.Load()
	tr, err := laptop.rcv.Load().Copy(context.Background(), copies.Request{Src: "gpu1:data", Dst: "gpu2:scratch/"})
	if err != nil {
		t.Fatal(err)
	}
	if end := waitEnd(t, laptop, tr); end.State != "done" || end.Progress.FilesDone != 12 {
		t.Fatalf("ended %+v; want done with 12 files", end)
	}
	// The listing, then one request a file over at most the copy's
	// streams (4) at once.
	if got := gpu1.conns.Load() - before; got > 5 {
		t.Errorf("the source accepted %d connections for 13 requests; want at most 5 (one a stream and the listing's)", got)
	}
}
