package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/reserve"
)

// TestForgedReservationHoldsNothing: a member (alpha) writes, as its own
// record, a reservation of mike's GPUs. A record's machine is its origin,
// and alpha has no such GPU: it is listed with its problem, never as a
// reservation of mike's GPUs. mike's own record of its GPU is believed.
func TestForgedReservationHoldsNothing(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, mikeID, "mike", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha", GPUs: []gpu.Info{{Index: 0, UUID: "GPU-alpha-0"}}}})
	putNode(t, db, mikeID, NodeRecord{Info: agent.Info{ID: mikeID, Name: "mike", GPUs: []gpu.Info{{Index: 0, UUID: "GPU-mike-0"}}}})
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	from := t0.Add(time.Hour)
	forged := reserve.Reservation{ID: "rsv-forged", Seq: 1, Member: alphaID, Units: []string{"GPU-mike-0"}, GPUs: []int{0},
		From: from, Until: from.Add(time.Hour), State: reserve.Accepted}
	own := reserve.Reservation{ID: "rsv-own", Seq: 1, Member: alphaID, Units: []string{"GPU-mike-0"}, GPUs: []int{0},
		From: from, Until: from.Add(time.Hour), State: reserve.Accepted}
	wrongKey := own
	wrongKey.ID = "rsv-other"
	putRecord(t, db, alphaID, KindReservation, forged.ID, forged.Until, mustJSON(t, forged))
	putRecord(t, db, mikeID, KindReservation, own.ID, own.Until, mustJSON(t, own))
	putRecord(t, db, mikeID, KindReservation, "rsv-key", own.Until, mustJSON(t, wrongKey))
	rs, err := svc.Reservations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Reservation{}
	for _, r := range rs {
		by[r.Node+"/"+r.ID] = r
	}
	if f := by[alphaID+"/rsv-forged"]; !strings.Contains(f.Problem, "not its machine's") || f.Node != alphaID {
		t.Errorf("the forged reservation = %+v; want it alpha's, with its problem", f)
	}
	if o := by[mikeID+"/rsv-own"]; o.Problem != "" || o.NodeName != "mike" || o.MemberName != "alpha" {
		t.Errorf("mike's own reservation = %+v; want it believed", o)
	}
	if k := by[mikeID+"/rsv-other"]; k.Problem == "" {
		t.Errorf("a record whose key is not its reservation's ID = %+v; want a problem", k)
	}
}

// TestReplicaReservationsForTheReport: with no source wired, the report
// reads the reservations from the replica, as Reservations lists them:
// the believed, accepted ones in the span, never a forged one.
func TestReplicaReservationsForTheReport(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, mikeID, "mike", false)
	putNode(t, db, mikeID, NodeRecord{Info: agent.Info{ID: mikeID, Name: "mike", GPUs: []gpu.Info{{Index: 0, UUID: "GPU-mike-0"}}}})
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	from := t0.Add(time.Hour)
	own := reserve.Reservation{ID: "rsv-own", Seq: 1, Member: alphaID, Units: []string{"GPU-mike-0"}, From: from, Until: from.Add(time.Hour), State: reserve.Accepted}
	gone := own
	gone.ID, gone.State = "rsv-gone", reserve.Cancelled
	forged := own
	forged.ID = "rsv-forged"
	putRecord(t, db, mikeID, KindReservation, own.ID, own.Until, mustJSON(t, own))
	putRecord(t, db, mikeID, KindReservation, gone.ID, gone.Until, mustJSON(t, gone))
	putRecord(t, db, alphaID, KindReservation, forged.ID, forged.Until, mustJSON(t, forged))
	got := svc.Reader.reservations.Reservations(t0, t0.Add(24*time.Hour))
	if len(got) != 1 || got[0].Holder.ID != "rsv-own" || got[0].Holder.Kind != alloc.Reservation {
		t.Fatalf("the report's reservations = %+v; want rsv-own alone", got)
	}
	if none := svc.Reader.reservations.Reservations(from.Add(time.Hour), from.Add(2*time.Hour)); len(none) != 0 {
		t.Errorf("after its span = %+v; want none", none)
	}
}

// TestReservationStoreRoundTrip: the book's records come back after a
// restart, also a cancelled one.
func TestReservationStoreRoundTrip(t *testing.T) {
	db := openDB(t)
	st := ReservationStore{DB: db, Self: selfID}
	r := reserve.Reservation{ID: "rsv-1", Seq: 1, Member: alphaID, Units: []string{"GPU-0"}, From: t0, Until: t0.Add(time.Hour), State: reserve.Accepted}
	if err := st.SaveReservation(r); err != nil {
		t.Fatal(err)
	}
	r.State = reserve.Cancelled
	if err := st.SaveReservation(r); err != nil {
		t.Fatal(err)
	}
	got, err := st.LoadReservations()
	if err != nil || len(got) != 1 || got[0].State != reserve.Cancelled {
		t.Fatalf("LoadReservations = %+v, %v; want rsv-1 cancelled", got, err)
	}
}

// TestReservationSurvivesRestartInTheReplica: a book over the replica,
// opened again as after an agent restart, holds what it accepted and
// refuses what overlaps it; the record of a reservation over for a week
// is pruned on the next save.
func TestReservationSurvivesRestartInTheReplica(t *testing.T) {
	db := openDB(t)
	now := time.Now()
	units := func() []alloc.Unit {
		return []alloc.Unit{{ID: "GPU-0", Kind: alloc.GPU, Node: selfID, Index: 0}, {ID: "GPU-1", Kind: alloc.GPU, Node: selfID, Index: 1}}
	}
	open := func() *reserve.Book {
		b := reserve.NewBook(reserve.Config{Node: selfID, Units: units, Store: ReservationStore{DB: db, Self: selfID}})
		if err := b.Load(); err != nil {
			t.Fatal(err)
		}
		return b
	}
	old := reserve.Reservation{ID: "rsv-old", Seq: 1, Member: alphaID, Units: []string{"GPU-1"}, From: now.Add(-9 * 24 * time.Hour),
		Until: now.Add(-8 * 24 * time.Hour), State: reserve.Accepted}
	putRecord(t, db, selfID, KindReservation, old.ID, old.Until, mustJSON(t, old))
	alice := reserve.Caller{ID: alphaID, Role: "member"}
	r, err := open().Reserve(alice, reserve.Request{GPUIDs: []int{0}, From: now.Add(time.Hour), Seconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	b := open()
	if got := b.List(); len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("after a restart the book holds %+v; want only %s (rsv-old pruned)", got, r.ID)
	}
	_, err = b.Reserve(reserve.Caller{ID: mikeID, Role: "member"}, reserve.Request{GPUIDs: []int{0}, From: now.Add(90 * time.Minute), Seconds: 600})
	if err == nil || !strings.Contains(err.Error(), r.ID) {
		t.Fatalf("an overlap after a restart = %v; want refused naming %s", err, r.ID)
	}
}
