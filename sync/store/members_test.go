package store_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/sync/store"
)

func TestPutMemberLastWriterWins(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	base := store.MemberRow{ID: "M", Name: "lab1", Version: 2, AddedAt: t0, AddedBy: "B"}
	if changed, err := db.PutMember(ctx, base); err != nil || !changed {
		t.Fatalf("PutMember(new) = %v, %v; want true", changed, err)
	}
	tests := []struct {
		name        string
		row         store.MemberRow
		wantChanged bool
	}{
		{"same row", base, false},
		{"lower version", store.MemberRow{ID: "M", Name: "x", Version: 1, AddedBy: "Z"}, false},
		{"same version, lower writer", store.MemberRow{ID: "M", Name: "x", Version: 2, AddedBy: "A"}, false},
		{"same version, higher writer", store.MemberRow{ID: "M", Name: "lab1b", Version: 2, AddedAt: t0, AddedBy: "C"}, true},
		{"exact tie, tombstone wins", store.MemberRow{ID: "M", Name: "lab1b", Version: 2, Removed: true, AddedAt: t0, AddedBy: "C"}, true},
		{"exact tie, live loses", store.MemberRow{ID: "M", Name: "lab1b", Version: 2, AddedAt: t0, AddedBy: "C"}, false},
		{"higher version, lower writer", store.MemberRow{ID: "M", Name: "lab1", Version: 3, Removed: true, AddedAt: t0, AddedBy: "A"}, true},
		{"stale re-add", store.MemberRow{ID: "M", Name: "lab1", Version: 2, AddedAt: t0, AddedBy: "Z"}, false},
	}
	want := base
	for _, tt := range tests {
		changed, err := db.PutMember(ctx, tt.row)
		if err != nil || changed != tt.wantChanged {
			t.Errorf("%s: PutMember() = %v, %v; want %v", tt.name, changed, err, tt.wantChanged)
		}
		if tt.wantChanged {
			want = tt.row
		}
		got, _ := db.Members(ctx)
		if diff := cmp.Diff([]store.MemberRow{want}, got); diff != "" {
			t.Errorf("%s: Members (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestMembersConverge applies the same writes in different orders to two
// replicas: they end equal.
func TestMembersConverge(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	var writes []store.MemberRow
	for i := range 60 {
		writes = append(writes, store.MemberRow{
			ID: string(rune('a' + i%4)), Name: "n" + string(rune('0'+i%10)), Version: uint64(rng.IntN(5)),
			Removed: rng.IntN(3) == 0, AddedAt: t0.Add(time.Duration(i) * time.Millisecond), AddedBy: string(rune('P' + rng.IntN(4))),
		})
	}
	var states [][]store.MemberRow
	for range 2 {
		db, _ := openTest(t)
		rng.Shuffle(len(writes), func(i, j int) { writes[i], writes[j] = writes[j], writes[i] })
		for _, w := range writes {
			if _, err := db.PutMember(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		m, err := db.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, m)
	}
	if diff := cmp.Diff(states[0], states[1]); diff != "" {
		t.Errorf("replicas differ (-first +second):\n%s", diff)
	}
	// The same merge done in Go, with Supersedes.
	merged := map[string]store.MemberRow{}
	for _, w := range writes {
		if old, ok := merged[w.ID]; !ok || w.Supersedes(old) {
			merged[w.ID] = w
		}
	}
	want := []store.MemberRow{merged["a"], merged["b"], merged["c"], merged["d"]}
	if diff := cmp.Diff(want, states[0]); diff != "" {
		t.Errorf("store differs from Supersedes (-Go +store):\n%s", diff)
	}
}

func TestSettings(t *testing.T) {
	ctx := context.Background()
	db, path := openTest(t)
	if _, ok, err := db.Setting(ctx, "self.id"); ok || err != nil {
		t.Fatalf("Setting(unset) = %v, %v; want false, nil", ok, err)
	}
	for _, v := range []string{"first", "", "second"} {
		if err := db.SetSetting(ctx, "self.id", v); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := db.Setting(ctx, "self.id"); got != v || !ok || err != nil {
			t.Errorf("Setting() = %q, %v, %v; want %q, true", got, ok, err, v)
		}
	}
	db.Close()
	db = reopen(t, path)
	if got, _, _ := db.Setting(ctx, "self.id"); got != "second" {
		t.Errorf("Setting after reopen = %q; want second", got)
	}
}

// TestMembersPersonTie: two rows of one version and writer that differ in
// their person alone (which a correct writer never makes) end the same on
// every replica, whatever their order, as Supersedes orders them.
func TestMembersPersonTie(t *testing.T) {
	ctx := context.Background()
	a := store.MemberRow{ID: "M", Name: "laptop", Version: 3, AddedAt: t0, AddedBy: "B", Person: "P1", PersonName: "alice"}
	b := a
	b.Person, b.PersonName = "P2", "bob"
	c := a
	c.PersonName = "carol"
	for _, pair := range [][2]store.MemberRow{{a, b}, {a, c}} {
		want := pair[0]
		if pair[1].Supersedes(pair[0]) {
			want = pair[1]
		}
		if pair[0].Supersedes(pair[1]) == pair[1].Supersedes(pair[0]) {
			t.Fatalf("Supersedes orders neither or both of %+v and %+v", pair[0], pair[1])
		}
		for _, order := range [][2]store.MemberRow{pair, {pair[1], pair[0]}} {
			db, _ := openTest(t)
			for _, w := range order {
				if _, err := db.PutMember(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			got, err := db.Members(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]store.MemberRow{want}, got); diff != "" {
				t.Errorf("after %s then %s (-want +got):\n%s", order[0].PersonName, order[1].PersonName, diff)
			}
		}
	}
}
