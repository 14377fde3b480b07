package reserve_test

import (
	"errors"
	"testing"
	"time"

	"github.com/labpool/labpool/node/reserve"
)

// BenchmarkReserveFull: a request judged against a machine holding its
// most reservations to come but one (reserve.MaxActive-1), refused as
// overlapping:
// the policy, the bounds and alloc.Fit over every grant.
func BenchmarkReserveFull(b *testing.B) {
	f := &fixture{store: &memStore{}, policy: reserve.Policy{AheadSeconds: reserve.MaxSpan}}
	f.book = f.open()
	local := reserve.Caller{ID: node}
	for i := range reserve.MaxActive - 1 {
		req := reserve.Request{GPUIDs: []int{i % 4}, From: t0.Add(time.Duration(i/4+1) * time.Hour), Seconds: 3600}
		if _, err := f.book.Reserve(local, req); err != nil {
			b.Fatal(err)
		}
	}
	req := reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: 600}
	b.ReportAllocs()
	for b.Loop() {
		var e *reserve.Error
		if _, err := f.book.Reserve(local, req); !errors.As(err, &e) || e.Rule != reserve.RuleOverlap {
			b.Fatalf("Reserve = %v; want refused by %q", err, reserve.RuleOverlap)
		}
	}
}
