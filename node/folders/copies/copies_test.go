package copies_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/internal/leaktest"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
)

// share shares a new directory of m holding files (name -> content).
func (m *machine) share(t *testing.T, name string, rw bool, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for f, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.reg.Add(folders.Share{Name: name, Path: dir, ReadWrite: rw}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitEnd follows the copy t from m until it ends.
func waitEnd(t *testing.T, m *machine, tr copies.Transfer) copies.Transfer {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		cur, err := m.rcv.Load().Transfer(context.Background(), tr.Node, tr.ID, time.Second)
		if err != nil {
			t.Fatalf("Transfer: %v", err)
		}
		if cur.State != "running" {
			return cur
		}
	}
	t.Fatalf("copy %s still running", tr.ID)
	return tr
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCopyBetweenMembers: the laptop asks gpu2 to pull gpu1's folder; the
// copy runs on gpu2, reports its progress, ends done, tells gpu2 its share
// changed, and the laptop lists it.
func TestCopyBetweenMembers(t *testing.T) {
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	gpu1.share(t, "data", false, map[string]string{"a.txt": "alpha", "sub/b.txt": "beta"})
	scratch := gpu2.share(t, "scratch", true, nil)

	tr, err := laptop.rcv.Load().Copy(context.Background(), copies.Request{Src: "gpu1:data", Dst: "gpu2:scratch/"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Node != gpu2.id || tr.State != "running" {
		t.Fatalf("started %+v; want running on gpu2", tr)
	}
	end := waitEnd(t, laptop, tr)
	if end.State != "done" || end.Progress.Files != 2 || end.Progress.FilesDone != 2 || end.Progress.Done != int64(len("alpha")+len("beta")) {
		t.Fatalf("ended %+v; want done with 2 files, 9 bytes", end)
	}
	if got := readFile(t, filepath.Join(scratch, "data", "sub", "b.txt")); got != "beta" {
		t.Errorf("copied b.txt = %q", got)
	}
	select {
	case f := <-gpu2.changed:
		if f != "scratch" {
			t.Errorf("changed %q; want scratch", f)
		}
	case <-time.After(5 * time.Second):
		t.Error("gpu2 was not told that scratch changed")
	}
	list, err := laptop.rcv.Load().Transfers(context.Background())
	if err != nil || len(list) != 1 || list[0].ID != tr.ID || list[0].State != "done" {
		t.Errorf("Transfers = %+v, %v; want the copy, done", list, err)
	}
}

// TestCopyFromAndToLocalPaths: a local source is offered to the receiver
// alone and withdrawn once the copy ends; a member's file lands in a local
// directory.
func TestCopyFromAndToLocalPaths(t *testing.T) {
	l := newLab(t)
	laptop, gpu1 := l.add("laptop"), l.add("gpu1")
	gpu1.share(t, "data", false, map[string]string{"model.bin": "weights"})
	scratch := gpu1.share(t, "scratch", true, nil)

	dir := t.TempDir()
	tr, err := laptop.rcv.Load().Copy(context.Background(), copies.Request{Src: "gpu1:data/model.bin", Dst: dir})
	if err != nil {
		t.Fatal(err)
	}
	if end := waitEnd(t, laptop, tr); end.State != "done" || tr.Node != laptop.id {
		t.Fatalf("pull here ended %+v", end)
	}
	if got := readFile(t, filepath.Join(dir, "model.bin")); got != "weights" {
		t.Errorf("pulled %q", got)
	}

	src := filepath.Join(dir, "model.bin")
	tr, err = laptop.rcv.Load().Copy(context.Background(), copies.Request{Src: src, Dst: "gpu1:scratch/"})
	if err != nil {
		t.Fatal(err)
	}
	if end := waitEnd(t, laptop, tr); end.State != "done" {
		t.Fatalf("push ended %+v", end)
	}
	if got := readFile(t, filepath.Join(scratch, "model.bin")); got != "weights" {
		t.Errorf("pushed %q", got)
	}
	select {
	case share := <-laptop.removed:
		if _, err := laptop.reg.Get(share); !errors.Is(err, folders.ErrNoShare) {
			t.Errorf("the local source %s is still offered: %v", share, err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the local source is still offered 5 s after its copy ended")
	}
}

// TestRefusalsMatchSentinels: each refusal keeps its rule, as a sentinel
// here and as its status on the wire.
func TestRefusalsMatchSentinels(t *testing.T) {
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	gpu1.share(t, "data", false, map[string]string{"a": "a"})
	gpu2.share(t, "ro", false, nil)
	tests := []struct {
		name     string
		req      copies.Request
		wantErr  error
		wantCode int
	}{
		{"both local", copies.Request{Src: "a", Dst: "b"}, copies.ErrInvalid, 0},
		{"no such local source", copies.Request{Src: filepath.Join(t.TempDir(), "none"), Dst: "gpu2:ro"}, copies.ErrInvalid, 0},
		{"read-only destination", copies.Request{Src: "gpu1:data", Dst: "gpu2:ro"}, nil, http.StatusForbidden},
		{"no such destination", copies.Request{Src: "gpu1:data", Dst: "gpu2:none"}, nil, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := laptop.rcv.Load().Copy(context.Background(), tt.req)
			var r *refusal
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Copy = %v; want %v", err, tt.wantErr)
			case tt.wantCode != 0 && (!errors.As(err, &r) || r.status != tt.wantCode):
				t.Errorf("Copy = %v; want status %d", err, tt.wantCode)
			}
		})
	}
	if _, err := laptop.rcv.Load().Transfer(context.Background(), "", "nope", 0); !errors.Is(err, copies.ErrNotFound) {
		t.Errorf("Transfer of an unknown copy = %v; want ErrNotFound", err)
	}
}

// TestCancelOfRemovedDevice: removing the device that asked for a copy
// ends that copy within 1 s, and only that one.
func TestCancelOfRemovedDevice(t *testing.T) {
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	gpu1.share(t, "data", false, map[string]string{"a": "alpha"})
	gpu2.share(t, "scratch", true, nil)
	gpu2.blocked.Store(true) // its copies wait for data

	tr, err := laptop.rcv.Load().Copy(context.Background(), copies.Request{Src: "gpu1:data", Dst: "gpu2:scratch/"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if cur := waitFor(t, gpu2, tr.ID, 0); cur.State != "running" {
		t.Fatalf("before the removal: %+v; want running", cur)
	}
	gpu2.rcv.Load().CancelOf(gpu1.id + "x") // another device: nothing ends
	if cur := waitFor(t, gpu2, tr.ID, 100*time.Millisecond); cur.State != "running" {
		t.Fatalf("after removing another device: %+v; want running", cur)
	}
	start := time.Now()
	gpu2.rcv.Load().CancelOf(laptop.id)
	cur := waitFor(t, gpu2, tr.ID, time.Second)
	if cur.State != "failed" || !strings.Contains(cur.Error, context.Canceled.Error()) || time.Since(start) > time.Second {
		t.Errorf("after removing the laptop: %+v after %v; want failed (cancelled) within 1 s", cur, time.Since(start))
	}
}

// waitFor is the copy id on m once it ends or wait passes.
func waitFor(t *testing.T, m *machine, id string, wait time.Duration) copies.Transfer {
	t.Helper()
	cur, err := m.rcv.Load().Transfer(context.Background(), "", id, wait)
	if err != nil {
		t.Fatal(err)
	}
	return cur
}

// TestResumeAfterRestart: the copies started through a machine are listed
// after it restarts; one whose receiver restarted mid-copy is "unknown",
// and copying again resumes it to the end.
func TestResumeAfterRestart(t *testing.T) {
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	gpu1.share(t, "data", false, map[string]string{"a": "alpha"})
	scratch := gpu2.share(t, "scratch", true, nil)
	gpu2.blocked.Store(true)
	req := copies.Request{Src: "gpu1:data", Dst: "gpu2:scratch/"}
	tr, err := laptop.rcv.Load().Copy(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}

	laptop.halt()
	laptop.start()
	gpu2.halt() // ends its copies
	gpu2.start()
	gpu2.blocked.Store(false)

	list, err := laptop.rcv.Load().Transfers(context.Background())
	if err != nil || len(list) != 1 || list[0].ID != tr.ID || list[0].State != "unknown" || list[0].Src != "gpu1:data" {
		t.Fatalf("Transfers after restarts = %+v, %v; want the copy, unknown", list, err)
	}
	again, err := laptop.rcv.Load().Copy(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if end := waitEnd(t, laptop, again); end.State != "done" {
		t.Fatalf("copying again ended %+v", end)
	}
	if got := readFile(t, filepath.Join(scratch, "data", "a")); got != "alpha" {
		t.Errorf("copied %q", got)
	}
	list, _ = laptop.rcv.Load().Transfers(context.Background())
	if len(list) != 2 || list[0].ID != again.ID || list[0].State != "done" {
		t.Errorf("Transfers = %+v; want the new copy first, done", list)
	}
}

// TestRunLeavesNoGoroutine: Run cancels the copies under way and returns
// only once their goroutines have exited, after telling their end; a copy
// asked for afterwards is refused.
func TestRunLeavesNoGoroutine(t *testing.T) {
	l := newLab(t)
	laptop, gpu1, gpu2 := l.add("laptop"), l.add("gpu1"), l.add("gpu2")
	gpu1.share(t, "data", false, map[string]string{"a": "alpha"})
	gpu2.share(t, "scratch", true, nil)
	gpu2.blocked.Store(true)
	local := filepath.Join(t.TempDir(), "x")
	os.WriteFile(local, []byte("x"), 0o644)
	var ids []string
	for _, req := range []copies.Request{{Src: "gpu1:data", Dst: "gpu2:scratch/"}, {Src: local, Dst: "gpu2:scratch/"}} {
		tr, err := laptop.rcv.Load().Copy(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tr.ID)
	}
	time.Sleep(50 * time.Millisecond)
	for _, fn := range []string{"copies.(*Receiver).start.func", "copies.(*Receiver).withdrawOffer"} {
		if goroutinesIn(fn) == 0 {
			t.Fatalf("no goroutine in %s before Run returns: the test proves nothing", fn)
		}
	}
	rcv := gpu2.rcv.Load()
	for _, m := range []*machine{gpu2, laptop, gpu1} {
		m.halt()
	}
	// A goroutine that has told its WaitGroup it is done may still be on
	// its way out (its stack still names the Receiver that started it):
	// give those a moment; one that stays is a leak.
	n := goroutinesIn("copies.(*Receiver)")
	for end := time.Now().Add(2 * time.Second); n > 0 && time.Now().Before(end); n = goroutinesIn("copies.(*Receiver)") {
		time.Sleep(10 * time.Millisecond)
	}
	if n > 0 {
		t.Errorf("%d goroutines of the copy engine outlive Run:\n%s", n, leaktest.Stacks())
	}
	for _, id := range ids {
		if cur, err := rcv.Transfer(context.Background(), "", id, 0); err != nil || cur.State != "failed" || cur.Finished == nil {
			t.Errorf("copy %s after Run: %+v, %v; want failed", id, cur, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := laptop.rcv.Load().Copy(ctx, copies.Request{Src: "gpu1:data", Dst: t.TempDir()}); !errors.Is(err, copies.ErrStopped) {
		t.Errorf("Copy after Run = %v; want ErrStopped", err)
	}
}

// goroutinesIn counts the goroutines with a frame in fn (a substring).
func goroutinesIn(fn string) int {
	n := 0
	for _, g := range strings.Split(leaktest.Stacks(), "\n\n") {
		if strings.Contains(g, fn) && !strings.Contains(g, "testing.tRunner") {
			n++
		}
	}
	return n
}
