package pool_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
)

var (
	devA = peer.NewID([]byte("a"))
	devB = peer.NewID([]byte("b"))
	t0   = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func TestMerge(t *testing.T) {
	lo, hi := devA, devB
	if string(lo[:]) > string(hi[:]) {
		lo, hi = hi, lo
	}
	rec := func(v uint64, by peer.ID, removed bool) pool.Member {
		return pool.Member{ID: devA, Name: "a", Version: v, AddedBy: by, Removed: removed, AddedAt: t0}
	}
	tests := []struct {
		name string
		a, b pool.Member
		want pool.Member
	}{
		{"higher version wins", rec(2, lo, false), rec(1, hi, false), rec(2, lo, false)},
		{"tombstone with higher version removes", rec(1, lo, false), rec(2, lo, true), rec(2, lo, true)},
		{"stale tombstone loses", rec(1, lo, true), rec(2, lo, false), rec(2, lo, false)},
		{"same version: higher writer wins", rec(3, lo, true), rec(3, hi, false), rec(3, hi, false)},
		{"full tie: tombstone wins", rec(3, lo, false), rec(3, lo, true), rec(3, lo, true)},
		{"identical", rec(3, lo, false), rec(3, lo, false), rec(3, lo, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, pool.Merge(tt.a, tt.b)); diff != "" {
				t.Errorf("Merge(a, b) (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, pool.Merge(tt.b, tt.a)); diff != "" {
				t.Errorf("Merge(b, a) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetConverges applies the same records in many orders, with
// duplicates: every replica must end with the same set.
func TestSetConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	devs := []peer.ID{devA, devB, peer.NewID([]byte("c"))}
	var records []pool.Member
	for range 60 {
		records = append(records, pool.Member{
			ID:      devs[rng.IntN(len(devs))],
			Name:    []string{"x", "y"}[rng.IntN(2)],
			Version: uint64(rng.IntN(5)),
			Removed: rng.IntN(3) == 0,
			AddedBy: devs[rng.IntN(len(devs))],
			AddedAt: t0.Add(time.Duration(rng.IntN(3)) * time.Second),
		})
	}
	want := pool.NewSet(records...).All()
	for range 20 {
		shuffled := append([]pool.Member(nil), records...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		half := len(shuffled) / 2
		s := pool.NewSet(shuffled[:half]...)
		s.Apply(pool.NewSet(shuffled[half:]...).All()...) // merge of two replicas
		s.Apply(shuffled...)                              // replayed: no change
		if diff := cmp.Diff(want, s.All()); diff != "" {
			t.Fatalf("replica diverged (-want +got):\n%s", diff)
		}
	}
}

func TestSetAdmitRemove(t *testing.T) {
	s := pool.NewSet(pool.Member{ID: devA, Name: "a", Version: 4, AddedBy: devA, AddedAt: t0})
	joined := s.Admit(devB, "b", devA, t0)
	if joined.Version != 5 || !s.Allowed(devB) || joined.AddedBy != devA {
		t.Fatalf("Admit = %+v, allowed %v", joined, s.Allowed(devB))
	}
	gone := s.Remove(devB, devA, t0.Add(time.Minute))
	if gone.Version != 6 || !gone.Removed || gone.Name != "b" || s.Allowed(devB) {
		t.Fatalf("Remove = %+v, allowed %v", gone, s.Allowed(devB))
	}
	if got := len(s.Active()); got != 1 {
		t.Errorf("Active() has %d members; want 1", got)
	}
	// A replica that still has the admission learns the removal, not the reverse.
	other := pool.NewSet(joined)
	if changed := other.Apply(gone); len(changed) != 1 || other.Allowed(devB) {
		t.Errorf("Apply(tombstone) changed %v, allowed %v", changed, other.Allowed(devB))
	}
	if changed := other.Apply(joined); len(changed) != 0 || other.Allowed(devB) {
		t.Errorf("Apply(stale admission) changed %v, allowed %v", changed, other.Allowed(devB))
	}
	if s.Allowed(peer.NewID([]byte("stranger"))) {
		t.Error("a stranger is allowed")
	}
}
