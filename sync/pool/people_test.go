package pool_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// TestAddDeviceQuickStart is the quick start of a lab: alice creates the
// pool on the station as herself, adds her laptop from the station, and
// the laptop is an owner the moment it joins: it invites bob with no
// second command on the station. Bob cannot add a device to alice; an
// admin's device can add one to bob, and a person removed with all their
// devices comes back by name.
func TestAddDeviceQuickStart(t *testing.T) {
	station, laptop := newDevice(t, "dgx", nil), newDevice(t, "alice-laptop", nil)
	if _, _, err := station.m.Create(ctxT(t), "alice"); err != nil {
		t.Fatal(err)
	}
	_, code, err := station.m.AddDevice(ctxT(t), "", 0)
	if err != nil {
		t.Fatalf("AddDevice: %v", err)
	}
	if err := laptop.m.Join(ctxT(t), code, station.addr(), "ignored"); err != nil {
		t.Fatalf("Join with the code of AddDevice: %v", err)
	}
	if r := roleOf(laptop, laptop); r != pool.RoleOwner {
		t.Fatalf("alice's laptop is %q on joining; want owner, alice's role", r)
	}
	_, bobCode, err := laptop.m.Invite(ctxT(t), pool.RoleMember, 1, time.Hour)
	if err != nil {
		t.Fatalf("alice's laptop invites: %v", err)
	}
	bob, bobWS := newDevice(t, "bob-laptop", nil), newDevice(t, "bob-ws", nil)
	syncLogs(t, laptop, station)
	if err := bob.m.Join(ctxT(t), bobCode, station.addr(), "bob"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bob.m.AddDevice(ctxT(t), "alice", 0); !errors.Is(err, pool.ErrOutOfRole) || !strings.Contains(err.Error(), "only a person's own devices") {
		t.Fatalf("bob adds a device to alice: %v; want out of role, naming the rule", err)
	}
	syncLogs(t, laptop, bob)
	_, wsCode, err := bob.m.AddDevice(ctxT(t), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	syncLogs(t, bob, station)
	if err := bobWS.m.Join(ctxT(t), wsCode, station.addr(), ""); err != nil {
		t.Fatal(err)
	}
	people := station.m.Persons()
	names := map[string]int{}
	for _, p := range people {
		names[p.Name+"/"+string(p.Role)] = len(p.Devices)
	}
	if want := map[string]int{"alice/owner": 2, "bob/member": 2}; !equalMaps(names, want) {
		t.Fatalf("people on the station: %v; want %v", names, want)
	}
	if err := station.m.Remove(ctxT(t), "bob"); err != nil {
		t.Fatalf("Remove bob: %v", err)
	}
	for _, d := range []*device{bob, bobWS} {
		if _, ok := station.m.Role(d.id.ID); ok {
			t.Errorf("%s is in the pool after its person's removal", d.name)
		}
	}
	if err := station.m.Readmit(ctxT(t), "bob"); err != nil {
		t.Fatalf("Readmit bob: %v", err)
	}
	for _, d := range []*device{bob, bobWS} {
		if r, ok := station.m.Role(d.id.ID); !ok || r != pool.RoleMember {
			t.Errorf("%s after bob's readmission: %q, %v; want member", d.name, r, ok)
		}
	}
}

// syncLogs gives to the records from holds, as replication would.
func syncLogs(t testing.TB, from, to *device) {
	t.Helper()
	raws, _ := from.m.Records()
	if err := to.m.Receive(ctxT(t), from.id.ID, raws); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateLinkedPool opens the replica of a pool that labpool wrote
// before a member was a person (testdata/linked, made by mklinked.go):
// every device is a person of its own, named after it, with its role;
// nothing accepted is lost; an owner merges two people into one; a person
// adds a device; all of it survives a restart.
func TestMigrateLinkedPool(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	_, open := openCopy(t, "testdata/linked", []string{"dgx", "alice-laptop", "bob-laptop", "bob-ws", "carol"}, func() time.Time { return clock })
	people := func(m *pool.Manager) map[string]string {
		out := map[string]string{}
		for _, p := range m.Persons() {
			v := string(p.Role)
			for range p.Devices {
				v += "+"
			}
			for range p.Removed {
				v += "-"
			}
			out[p.Name] = v
		}
		return out
	}
	m, db := open()
	before, _ := m.Records()
	want := map[string]string{"dgx": "owner+", "alice-laptop": "owner+", "bob-laptop": "member+", "bob-ws": "admin+", "carol": "viewer-"}
	if got := people(m); !equalMaps(got, want) {
		t.Fatalf("people after the migration = %v; want %v (each device its own person)", got, want)
	}
	if err := m.Merge(ctx, "alice-laptop", "dgx"); err != nil {
		t.Fatalf("merge alice-laptop into dgx: %v", err)
	}
	if err := m.Merge(ctx, "bob-ws", "bob-laptop"); err != nil {
		t.Fatalf("merge bob-ws into bob-laptop: %v", err)
	}
	if _, _, err := m.AddDevice(ctx, "bob-laptop", 0); err != nil {
		t.Fatalf("an owner adds a device to bob: %v", err)
	}
	after, _ := m.Records()
	kept := map[string]bool{}
	for _, r := range after {
		kept[string(r)] = true
	}
	for _, r := range before {
		if !kept[string(r)] {
			t.Fatalf("a record held before the migration is gone: %s", r)
		}
	}
	db.Close()

	m, db = open()
	defer db.Close()
	want = map[string]string{"dgx": "owner++", "bob-laptop": "member++", "carol": "viewer-"}
	if got := people(m); !equalMaps(got, want) {
		t.Errorf("people after the merges and a restart = %v; want %v", got, want)
	}
	if ms, _ := m.Snapshot(); len(ms.Members) != 5 {
		t.Errorf("%d devices after the restart; want 5", len(ms.Members))
	}
}
