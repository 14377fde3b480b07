package jobs

import (
	"slices"
	"strings"
	"testing"
)

// TestLedgerEdge: the GPUs a grant takes and a release frees are told, as
// they change hands (the sampler reads their energy counters then); a
// refused grant tells nothing.
func TestLedgerEdge(t *testing.T) {
	l := NewLedger()
	var told [][]string
	l.edge = func(uuids ...string) {
		if !l.mu.TryLock() {
			t.Error("told while the ledger is locked")
			return
		}
		l.mu.Unlock()
		told = append(told, slices.Sorted(slices.Values(uuids)))
	}
	gpus := fakeGPUs(4)
	if _, err := l.Grant("j1", Request{Count: 2}, gpus, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Grant("j2", Request{Count: 3}, gpus, nil); err == nil {
		t.Fatal("3 GPUs granted where 2 are free")
	}
	l.Release("nobody")
	l.Release("j1")
	want := []string{"GPU-0000,GPU-0001", "GPU-0000,GPU-0001"}
	var got []string
	for _, u := range told {
		got = append(got, strings.Join(u, ","))
	}
	if !slices.Equal(got, want) {
		t.Errorf("told %q; want %q (the grant, then the release)", got, want)
	}
}
