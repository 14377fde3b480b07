package jobs

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestLedgerGrant(t *testing.T) {
	l := NewLedger()
	gpus := fakeGPUs(4)
	external := map[string]bool{"GPU-0003": true}
	got, err := l.Grant("j1", Request{Count: 2}, gpus, external)
	if err != nil || strings.Join(got, ",") != "GPU-0000,GPU-0001" {
		t.Fatalf("grant 2: %v %v", got, err)
	}
	_, err = l.Grant("j2", Request{Count: 2}, gpus, external)
	var be *BusyError
	if !errors.As(err, &be) || be.Free != 1 || len(be.Busy) != 3 {
		t.Fatalf("grant over capacity: %#v", err)
	}
	for _, want := range []string{"GPUs 0, 1: job j1", "GPU 3: a process outside labpool", "2 GPUs asked, 1 free"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("busy error %q does not say %q", err, want)
		}
	}
	if got, err := l.Grant("j3", Request{Indexes: []int{2}}, gpus, external); err != nil || got[0] != "GPU-0002" {
		t.Fatalf("grant by index: %v %v", got, err)
	}
	if _, err := l.Grant("j4", Request{Indexes: []int{3}}, gpus, external); err == nil {
		t.Errorf("a GPU busy outside labpool was granted")
	}
	if _, err := NewLedger().Grant("j4", Request{Count: 1, MinMemBytes: 100 << 30}, fakeGPUs(1), nil); err == nil || !strings.Contains(err.Error(), "less than asked") {
		t.Errorf("a GPU below the memory asked: %v", err)
	}
	if got, err := l.Grant("j5", Request{}, gpus, nil); err != nil || len(got) != 0 {
		t.Errorf("asking for nothing: %v %v", got, err)
	}
	if _, err := l.Grant("j6", Request{Count: 5}, gpus, nil); err == nil {
		t.Errorf("5 of 4 GPUs granted")
	}
	l.Release("j1")
	if got, err := l.Grant("j2", Request{Count: 2}, gpus, external); err != nil || len(got) != 2 {
		t.Fatalf("grant after release: %v %v", got, err)
	}
	if want := map[string]string{"GPU-0000": "j2", "GPU-0001": "j2", "GPU-0002": "j3"}; fmt.Sprint(l.Granted()) != fmt.Sprint(want) {
		t.Errorf("Granted() = %v, want %v", l.Granted(), want)
	}
}

func TestLedgerRestore(t *testing.T) {
	l := NewLedger()
	if c := l.Restore("a", []string{"GPU-0000", "GPU-0001"}); len(c) != 0 {
		t.Fatalf("conflicts on an empty ledger: %v", c)
	}
	if c := l.Restore("b", []string{"GPU-0001", "GPU-0002"}); len(c) != 1 || c[0] != "GPU-0001" {
		t.Fatalf("conflicts = %v, want GPU-0001", c)
	}
	if g := l.Granted(); g["GPU-0001"] != "a" || g["GPU-0002"] != "b" {
		t.Errorf("after restore: %v", g)
	}
	if _, err := l.Grant("c", Request{Count: 1}, fakeGPUs(3), nil); err == nil {
		t.Errorf("restored GPUs were granted again")
	}
}

// TestLedgerConcurrent: 1000 concurrent requests on 8 GPUs never
// double-allocate, and releases interleave with grants.
func TestLedgerConcurrent(t *testing.T) {
	l := NewLedger()
	gpus := fakeGPUs(8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	holders := map[string]string{} // GPU -> job, while held
	var double []string
	granted := 0
	for i := range 1000 {
		wg.Go(func() {
			job := fmt.Sprintf("j%d", i)
			got, err := l.Grant(job, Request{Count: 1 + i%3}, gpus, nil)
			if err != nil {
				return
			}
			mu.Lock()
			granted++
			for _, u := range got {
				if h, taken := holders[u]; taken {
					double = append(double, u+" to "+h+" and "+job)
				}
				holders[u] = job
			}
			mu.Unlock()
			if i%2 == 0 { // half the jobs end, the others hold on
				mu.Lock()
				for _, u := range got {
					delete(holders, u)
				}
				mu.Unlock()
				l.Release(job)
			}
		})
	}
	wg.Wait()
	if len(double) > 0 {
		t.Fatalf("granted twice: %v", double)
	}
	if granted == 0 || len(l.Granted()) != len(holders) {
		t.Fatalf("%d grants, ledger %v, holders %v", granted, l.Granted(), holders)
	}
}
