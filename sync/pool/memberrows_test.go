package pool_test

import (
	"testing"
)

// TestMemberTableNamesPerson: the member table the manager writes names
// each device's person, so that the app names people: alice's second
// device is a device of alice (her first device's ID), and bob's first
// device is a person of his own.
func TestMemberTableNamesPerson(t *testing.T) {
	station, laptop, bob := newDevice(t, "dgx", nil), newDevice(t, "alice-laptop", nil), newDevice(t, "bob-laptop", nil)
	if _, _, err := station.m.Create(ctxT(t), "alice"); err != nil {
		t.Fatal(err)
	}
	_, code, err := station.m.AddDevice(ctxT(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := laptop.m.Join(ctxT(t), code, station.addr(), ""); err != nil {
		t.Fatal(err)
	}
	_, bobCode, err := station.m.Invite(ctxT(t), "member", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.m.Join(ctxT(t), bobCode, station.addr(), "bob"); err != nil {
		t.Fatal(err)
	}
	rows, err := station.db.Members(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	alice := station.id.ID.String()
	want := map[string][2]string{
		alice:                 {alice, "alice"},
		laptop.id.ID.String(): {alice, "alice"},
		bob.id.ID.String():    {bob.id.ID.String(), "bob"},
	}
	if len(rows) != len(want) {
		t.Fatalf("member table holds %d rows; want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if got := [2]string{r.Person, r.PersonName}; got != want[r.ID] {
			t.Errorf("member %s: person %q; want %q", r.Name, got, want[r.ID])
		}
	}
}
