package jobs

import (
	"fmt"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// BenchmarkLedgerGrant: one grant and its release on an 8-GPU machine
// where 6 GPUs are held (4 whole, 2 in quarter shares), with a
// reservation and the owner's use beside: the ledger's cost per decision,
// alloc.Fit included.
func BenchmarkLedgerGrant(b *testing.B) {
	gpus := fakeGPUs(8)
	l := NewLedger()
	for i := range 4 {
		if _, err := l.Grant(fmt.Sprint("whole", i), Request{Count: 1}, gpus, nil); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 8 {
		if _, err := l.Grant(fmt.Sprint("share", i), Request{Count: 1, Share: 0.25}, gpus, nil); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	l.SetHeld("reservations", []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Reservation, ID: "r", Member: "bob"},
		Units: []string{"GPU-0006"}, From: now.Add(time.Hour), Until: now.Add(2 * time.Hour)}})
	external := map[string]bool{"GPU-0007": false}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Grant("new", Request{Count: 1, Owner: "alice", Limit: 30 * time.Minute}, gpus, external); err != nil {
			b.Fatal(err)
		}
		l.Release("new")
	}
}

// BenchmarkRekeep: what 200 starving queued jobs of 8 GPUs each keep on
// an 8-GPU machine where 6 GPUs are held (the first keeps the 2 free ones,
// the others nothing): the cost each submit, queue pass and grants record
// pays for the starvation rule.
func BenchmarkRekeep(b *testing.B) {
	gpus := fakeGPUs(8)
	l := NewLedger()
	for i := range 6 {
		if _, err := l.Grant(fmt.Sprint("whole", i), Request{Count: 1}, gpus, nil); err != nil {
			b.Fatal(err)
		}
	}
	var ks []Kept
	for i := range 200 {
		ks = append(ks, Kept{Job: fmt.Sprint("q", i), Want: Request{Count: 8, Owner: "bob"}})
	}
	b.ReportAllocs()
	for b.Loop() {
		l.Rekeep(ks, gpus, nil)
	}
	if kept := l.Grants()[6:]; len(kept) != 1 || len(kept[0].Units) != 2 {
		b.Fatalf("kept %+v; want the first starving job to keep the 2 free GPUs", kept)
	}
}
