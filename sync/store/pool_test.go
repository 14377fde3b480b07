package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/sync/store"
)

func TestSavePoolReplacesMembers(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	a := store.PoolRecord{Hash: "aa", Version: 2, Data: []byte(`{"a":1}`)}
	b := store.PoolRecord{Hash: "bb", Version: 1, Data: []byte(`{"b":1}`)}
	m1 := store.MemberRow{ID: "M1", Name: "lab1", Version: 1, AddedAt: t0, AddedBy: "M1", Role: "owner"}
	m2 := store.MemberRow{ID: "M2", Name: "lab2", Version: 2, AddedAt: t0, AddedBy: "M1", Role: "viewer"}
	if err := db.SavePool(ctx, []store.PoolRecord{a, b}, []store.MemberRow{m1, m2}); err != nil {
		t.Fatal(err)
	}
	// Records and members are replaced whole (a late record can void later ones).
	m2.Removed = true
	if err := db.SavePool(ctx, []store.PoolRecord{b, a}, []store.MemberRow{m2}); err != nil {
		t.Fatal(err)
	}
	recs, err := db.PoolRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.PoolRecord{b, a}, recs); diff != "" {
		t.Errorf("PoolRecords (-want +got):\n%s", diff)
	}
	ms, err := db.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.MemberRow{m2}, ms); diff != "" {
		t.Errorf("Members (-want +got):\n%s", diff)
	}
	if err := db.ClearPool(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, _ := db.PoolRecords(ctx); len(recs) != 0 {
		t.Errorf("after ClearPool: %d records", len(recs))
	}
}
