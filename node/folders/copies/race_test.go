package copies_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders/copies"
)

// noData is a Dialer whose data clients fail at once, off the network: a
// copy over them ends as soon as it starts.
type noData struct{}

func (noData) NodeDataClient(string) (*http.Client, error) {
	return &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("no data path")
	})}, nil
}

// TestCopyEndingAtOnce: a copy may record its end while the receiver is
// still answering the request that started it; the answer is what the
// receiver recorded before the copy ran, not the copy's record read while
// it writes (go test -race).
func TestCopyEndingAtOnce(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	gpu1.share(t, "data", false, map[string]string{"a.txt": "alpha"})
	gpu2.share(t, "scratch", true, nil)
	cfg := copies.DefaultConfig()
	cfg.Self = gpu2.id
	rcv := copies.New(cfg, copies.Deps{Folders: removals{gpu2.reg, gpu2.removed}, Store: &memSettings{}, Dialer: noData{}, Members: gpu2})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- rcv.Run(runCtx) }()
	defer func() { stop(); <-done }()
	gpu2.rcv.Store(rcv) // gpu2's server answers with it

	tr, err := laptop.rcv.Load().Copy(ctx, copies.Request{Src: "gpu1:data", Dst: "gpu2:scratch/"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != "running" {
		t.Errorf("started %+v; want running", tr)
	}
	end, err := laptop.rcv.Load().Transfer(ctx, tr.Node, tr.ID, 5*time.Second)
	if err != nil || end.State != "failed" {
		t.Errorf("ended %+v, %v; want failed (no data path)", end, err)
	}
}
