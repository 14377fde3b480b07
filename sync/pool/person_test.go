package pool_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// kindMerge is the merge's kind as a record on the wire names it.
const kindMerge = pool.Kind("merge")

// addDevice makes the invite by device by that adds a device to the
// person of device of, and the admission of device name with its code, by
// the creator.
func addDevice(f *fixture, by, of, name string) (inv, join pool.Record) {
	f.tb.Helper()
	f.tick()
	person, _ := f.l.Member(f.id(of))
	inv, code, err := f.l.NewDeviceInvite(f.keys[by], person.Person, 1, f.now.Add(time.Hour), f.now)
	if err != nil {
		f.tb.Fatalf("device invite by %s for %s: %v", by, of, err)
	}
	f.apply(inv)
	if _, ok := f.keys[name]; !ok {
		f.keys[name] = f.newKey(name)
	}
	return inv, f.join(name, code)
}

// TestPersonAddsDevice: a person adds a device from one of their own
// (an owner, then a member), and an admin adds one for a member; each new
// device is a device of that person with the person's role from the
// moment it joins, and acts in that role.
func TestPersonAddsDevice(t *testing.T) {
	f := newFixture(t, false)
	_, join := addDevice(f, "owner2", "owner2", "owner2-laptop")
	f.apply(join)
	laptop, _ := f.l.Member(f.id("owner2-laptop"))
	owner2, _ := f.l.Member(f.id("owner2"))
	if laptop.Role != pool.RoleOwner || laptop.Person != owner2.Person || laptop.PersonName != "owner2" {
		t.Fatalf("the owner's new laptop: %+v; want an owner, a device of %s", laptop, owner2.Person)
	}
	// It acts as an owner at once: it makes the member an admin.
	f.apply(f.role("owner2-laptop", "member", pool.RoleAdmin))
	f.apply(f.role("creator", "member", pool.RoleMember))

	_, join = addDevice(f, "member", "member", "member-ws")
	f.apply(join)
	_, join = addDevice(f, "admin", "viewer", "viewer-tablet")
	f.apply(join)
	want := map[string]string{"member-ws": "member/member", "viewer-tablet": "viewer/viewer"}
	for name, w := range want {
		m, _ := f.l.Member(f.id(name))
		if got := string(m.Role) + "/" + m.PersonName; got != w {
			t.Errorf("%s: role/person %s; want %s", name, got, w)
		}
	}
	people := map[string]int{}
	for _, p := range f.l.Persons() {
		people[p.Name] = len(p.Devices)
	}
	if wantPeople := map[string]int{"creator": 1, "owner2": 2, "admin": 1, "member": 2, "viewer": 2}; !reflect.DeepEqual(people, wantPeople) {
		t.Errorf("people and their devices: %v; want %v", people, wantPeople)
	}
}

// TestPersonRole: a role change of one device is the role of its person,
// on every device of theirs, and every replica says so whatever the order.
func TestPersonRole(t *testing.T) {
	f := newFixture(t, false)
	base := f.l.Records()
	inv, join := addDevice(f, "member", "member", "member-ws")
	f.apply(join)
	up := f.role("creator", "member-ws", pool.RoleAdmin)
	f.apply(up)
	for i, l := range everyOrder(t, f, base, inv, join, up) {
		for _, name := range []string{"member", "member-ws"} {
			if m, _ := l.Member(f.id(name)); m.Role != pool.RoleAdmin {
				t.Errorf("replica %d: %s is %s; want admin, its person's role", i, name, m.Role)
			}
		}
	}
}

// TestPersonDemotionConcurrent: a record that a person's second device
// signed, concurrent with the demotion of the person through their first
// device, is held without effect on every replica: the demotion takes the
// right from every device of theirs, whatever the version chosen.
func TestPersonDemotionConcurrent(t *testing.T) {
	f := newFixture(t, false)
	_, join := addDevice(f, "owner2", "owner2", "owner2-laptop")
	f.apply(join)
	base := f.l.Records()
	heads := f.l.Heads()
	// The laptop dates its record before the demotion: a time it chose
	// gives it nothing.
	promote := f.record("owner2-laptop", pool.Record{Kind: pool.KindRole, Subject: f.id("viewer"), Role: pool.RoleAdmin, Prev: heads})
	demote := f.role("creator", "owner2", pool.RoleMember)
	for i, l := range everyOrder(t, f, base, demote, promote) {
		if m, _ := l.Member(f.id("viewer")); m.Role != pool.RoleViewer {
			t.Errorf("replica %d: viewer is %s; want viewer (its promoter's person was demoted concurrently)", i, m.Role)
		}
		if m, _ := l.Member(f.id("owner2-laptop")); m.Role != pool.RoleMember {
			t.Errorf("replica %d: owner2-laptop is %s; want member, its person's role", i, m.Role)
		}
	}
}

// TestMerge: an owner merges two people (two devices of before people)
// into one: the devices are the second person's, with their name and
// role; every replica agrees.
func TestMerge(t *testing.T) {
	f := newFixture(t, false)
	base := f.l.Records()
	viewer, _ := f.l.Member(f.id("viewer"))
	member, _ := f.l.Member(f.id("member"))
	merge := f.record("owner2", pool.Record{Kind: kindMerge, Subject: viewer.ID, Person: member.Person})
	f.apply(merge)
	for i, l := range everyOrder(t, f, base, merge) {
		m, _ := l.Member(f.id("viewer"))
		if m.Person != member.Person || m.PersonName != "member" || m.Role != pool.RoleMember {
			t.Errorf("replica %d: the merged device %+v; want a member device of person member", i, m)
		}
		n := 0
		for _, p := range l.Persons() {
			if p.Active() {
				n++
			}
		}
		if n != 4 {
			t.Errorf("replica %d: %d people; want 4 after the merge", i, n)
		}
	}
}

// TestPersonAttacks: each person record an attacker would try is refused
// with its sentinel, naming the rule, and leaves the log as it was.
func TestPersonAttacks(t *testing.T) {
	person := func(f *fixture, name string) string {
		m, _ := f.l.Member(f.id(name))
		return m.Person
	}
	deviceInvite := func(f *fixture, by, of string, role pool.Role) pool.Record {
		inv, _ := inviteRecord(f, by, role)
		inv.Person = person(f, of)
		return signed(inv, f.keys[by])
	}
	tests := []refusal{
		{"a member adds a device to the creator", func(f *fixture) pool.Record {
			return deviceInvite(f, "member", "creator", pool.RoleOwner)
		}, pool.ErrOutOfRole, "only a person's own devices, or an admin or owner who may manage an owner, add a device to them"},
		{"an admin adds a device to an owner", func(f *fixture) pool.Record {
			return deviceInvite(f, "admin", "owner2", pool.RoleOwner)
		}, pool.ErrOutOfRole, "who may manage an owner"},
		{"a viewer adds a device to a member", func(f *fixture) pool.Record {
			return deviceInvite(f, "viewer", "member", pool.RoleMember)
		}, pool.ErrOutOfRole, "own devices"},
		{"an admin adds a device to a member", func(f *fixture) pool.Record {
			return deviceInvite(f, "admin", "member", pool.RoleMember)
		}, nil, ""},
		{"a device invite for more than the person's role", func(f *fixture) pool.Record {
			return deviceInvite(f, "member", "member", pool.RoleAdmin)
		}, pool.ErrMalformed, "grants the person's role, member, not admin"},
		{"an admission into a person its invite does not name", func(f *fixture) pool.Record {
			_, code := f.invite("creator", pool.RoleMember, 1, time.Hour)
			r, _ := inviteRecord(f, "creator", pool.RoleMember)
			_ = r
			inv, c := f.invite("creator", pool.RoleViewer, 1, time.Hour)
			f.apply(inv)
			_ = code
			adm := f.join("stranger", c)
			adm.Person = person(f, "creator")
			return signed(adm, f.keys["creator"])
		}, pool.ErrForged, "names person"},
		{"an admitter renames the joiner's person", func(f *fixture) pool.Record {
			inv, c := f.invite("creator", pool.RoleViewer, 1, time.Hour)
			f.apply(inv)
			req, err := pool.NewJoinRequest(c, pubOf(f.keys["stranger"]), "stranger", "eve")
			if err != nil {
				t.Fatal(err)
			}
			req.As = "alice"
			adm, err := f.l.Admit(f.keys["creator"], req, pubOf(f.keys["stranger"]), f.now)
			if err == nil {
				t.Fatal("Admit accepted a renamed person")
			}
			adm = f.record("creator", pool.Record{Kind: pool.KindJoin, Subject: f.id("stranger"), Role: pool.RoleViewer, Name: "stranger",
				As: "alice", Key: pubOf(f.keys["stranger"]), Invite: req.Invite, Proof: req.Proof})
			return adm
		}, pool.ErrForged, "proof"},
		{"an admin merges two people", func(f *fixture) pool.Record {
			return f.record("admin", pool.Record{Kind: kindMerge, Subject: f.id("viewer"), Person: person(f, "member")})
		}, pool.ErrOutOfRole, "only owners merge people"},
		{"an owner merges the creator into another", func(f *fixture) pool.Record {
			return f.record("owner2", pool.Record{Kind: kindMerge, Subject: f.id("creator"), Person: person(f, "owner2")})
		}, pool.ErrOutOfRole, "merged into nobody"},
		{"a merge into the person it is", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: kindMerge, Subject: f.id("member"), Person: person(f, "member")})
		}, pool.ErrReplayed, "already"},
		{"a merge into nobody", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: kindMerge, Subject: f.id("member")})
		}, pool.ErrMalformed, "person"},
		{"a merge into a person not in the pool", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: kindMerge, Subject: f.id("member"), Person: f.id("stranger")})
		}, pool.ErrNoMember, "no device in the pool"},
		{"a role change that names a person", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer, Person: person(f, "admin")})
		}, pool.ErrMalformed, "person"},
		{"a removal that names a person's name", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: pool.KindRemove, Subject: f.id("member"), As: "mallory"})
		}, pool.ErrMalformed, "person's name"},
		{"a person's name with spaces around it", func(f *fixture) pool.Record {
			inv, c := f.invite("creator", pool.RoleViewer, 1, time.Hour)
			f.apply(inv)
			return f.record("creator", pool.Record{Kind: pool.KindJoin, Subject: f.id("stranger"), Role: pool.RoleViewer, Name: "stranger",
				As: " alice", Key: pubOf(f.keys["stranger"]), Invite: inviteOf(c), Proof: make([]byte, 64)})
		}, pool.ErrMalformed, "person's name"},
		{"the creator's person demoted through their second device", func(f *fixture) pool.Record {
			_, join := addDevice(f, "creator", "creator", "creator-laptop")
			f.apply(join)
			return f.record("owner2", pool.Record{Kind: pool.KindRole, Subject: f.id("creator-laptop"), Role: pool.RoleMember})
		}, pool.ErrOutOfRole, "nobody changes the role of the pool's creator"},
		{"a device readmitted with a role not its person's", func(f *fixture) pool.Record {
			_, join := addDevice(f, "member", "member", "member-ws")
			f.apply(join)
			f.apply(f.remove("creator", "member-ws"))
			return readmit(f, "creator", "member-ws", pool.RoleAdmin)
		}, pool.ErrMalformed, "a device has its person's role"},
	}
	runRefusals(t, tests, nil)
}

// TestRemovePersonAllDevices: removing a person removes every device of
// theirs and voids the invite an admin made to add another device to them:
// a join by it, even one its admitter signed before seeing the removal and
// dated before it, adds nobody.
func TestRemovePersonAllDevices(t *testing.T) {
	f := newFixture(t, false)
	_, join := addDevice(f, "member", "member", "member-ws")
	f.apply(join)
	f.tick()
	inv, code, err := f.l.NewDeviceInvite(f.keys["admin"], mustPerson(f, "member"), 1, f.now.Add(time.Hour), f.now)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(inv)
	base := f.l.Records()
	f.keys["member-tablet"] = f.newKey("member-tablet")
	adm := f.join("member-tablet", code)
	f.l2(t, base, adm)
	f.tick()
	gone, err := f.l.NewRemovePerson(f.keys["creator"], f.id("member-ws"), f.now)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(gone)
	for i, l := range everyOrder(t, f, base, gone, adm) {
		for _, name := range []string{"member", "member-ws", "member-tablet"} {
			if m, ok := l.Member(f.id(name)); ok && !m.Removed {
				t.Errorf("replica %d: %s, a device of a removed person, is in the pool: %+v", i, name, m)
			}
		}
		if _, void := l.Superseded()[adm.Hash()]; !void {
			t.Errorf("replica %d: the admission concurrent with the person's removal has effect", i)
		}
	}
}

// l2 checks that adm is acceptable on the log of base (before the
// removals): the attack is a record a real admitter could sign.
func (f *fixture) l2(t *testing.T, base []pool.Record, adm pool.Record) {
	t.Helper()
	l, err := pool.Verify(f.l.Pool(), base, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Apply(adm, f.now); err != nil {
		t.Fatalf("the admission on the log before the removals: %v", err)
	}
}

func mustPerson(f *fixture, name string) string {
	m, ok := f.l.Member(f.id(name))
	if !ok {
		f.tb.Fatalf("no member %s", name)
	}
	return m.Person
}

// TestDeviceInviteAfterRoleChange: a person's own invite for a device of
// theirs stays usable when their role changes (the device comes in with
// the new role); an admin's invite for another person's device ends when
// the admin is demoted, as their other invites do.
func TestDeviceInviteAfterRoleChange(t *testing.T) {
	f := newFixture(t, false)
	f.tick()
	own, ownCode, err := f.l.NewDeviceInvite(f.keys["member"], mustPerson(f, "member"), 1, f.now.Add(time.Hour), f.now)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(own)
	f.tick()
	other, _, err := f.l.NewDeviceInvite(f.keys["admin"], mustPerson(f, "viewer"), 1, f.now.Add(time.Hour), f.now)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(other)
	f.apply(f.role("creator", "member", pool.RoleViewer))
	f.apply(f.role("creator", "admin", pool.RoleMember))
	if inv, _ := f.l.Invite(own.Subject); inv.Revoked {
		t.Errorf("the member's invite for their own device was revoked by their role change")
	}
	if inv, _ := f.l.Invite(other.Subject); !inv.Revoked {
		t.Errorf("the demoted admin's invite for the viewer's device is still usable")
	}
	f.keys["member-ws"] = f.newKey("member-ws")
	f.apply(f.join("member-ws", ownCode))
	if m, _ := f.l.Member(f.id("member-ws")); m.Role != pool.RoleViewer {
		t.Errorf("the new device is %s; want viewer, its person's role now", m.Role)
	}
}
