package pool_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/pool"
)

// kindReadmit is the readmission's kind as a record on the wire names it.
const kindReadmit = pool.Kind("readmit")

// readmit makes the readmission of device subject as role, signed by by.
func readmit(f *fixture, by, subject string, role pool.Role) pool.Record {
	return f.record(by, pool.Record{Kind: kindReadmit, Subject: f.id(subject), Role: role})
}

// TestReadmit: an admin removes the member; an owner readmits it. It is a
// member again, under its name, with the time it first joined (its
// history is its own), and it signs records again; every replica,
// whatever the order of delivery, says the same.
func TestReadmit(t *testing.T) {
	f := newFixture(t, false)
	before, _ := f.l.Member(f.id("member"))
	base := f.l.Records()
	remove := f.remove("admin", "member")
	f.apply(remove)
	back := readmit(f, "owner2", "member", pool.RoleMember)
	f.apply(back)
	m, ok := f.l.Member(f.id("member"))
	if !ok || m.Removed || m.Role != pool.RoleMember || m.Name != "member" || !m.AddedAt.Equal(before.AddedAt) {
		t.Fatalf("readmitted: %+v (held %v); want an active member named member, added at %v", m, ok, before.AddedAt)
	}
	for i, l := range everyOrder(t, f, base, remove, back) {
		if got, _ := l.Member(f.id("member")); got.Removed || got.Role != pool.RoleMember {
			t.Errorf("replica %d: member %+v; want readmitted", i, got)
		}
	}
	// It acts again: it leaves on its own record.
	leave := f.record("member", pool.Record{Kind: pool.KindRemove, Subject: f.id("member")})
	f.apply(leave)
	if m, _ := f.l.Member(f.id("member")); !m.Removed {
		t.Errorf("the readmitted member's own record has no effect: %+v", m)
	}
}

// TestReadmitAttacks: each readmission an attacker would try is refused
// with its sentinel, naming the rule, and leaves the log as it was.
func TestReadmitAttacks(t *testing.T) {
	tests := []refusal{
		{"a member readmits", func(f *fixture) pool.Record {
			return readmit(f, "member", "viewer", pool.RoleViewer)
		}, pool.ErrOutOfRole, "only admins and owners readmit"},
		{"an admin readmits as an owner", func(f *fixture) pool.Record {
			return readmit(f, "admin", "viewer", pool.RoleOwner)
		}, pool.ErrOutOfRole, "cannot make a device an owner"},
		{"an owner readmits an admin", func(f *fixture) pool.Record {
			f.apply(f.remove("creator", "admin"))
			return readmit(f, "owner2", "admin", pool.RoleAdmin) // accepted: the admin's own try is below
		}, nil, ""},
		{"an admin readmits a removed admin", func(f *fixture) pool.Record {
			f.apply(f.role("creator", "member", pool.RoleAdmin))
			f.apply(f.remove("creator", "admin"))
			return readmit(f, "member", "admin", pool.RoleAdmin)
		}, pool.ErrOutOfRole, "cannot readmit an admin"},
		{"an admin readmits a member as an admin", func(f *fixture) pool.Record {
			return readmit(f, "admin", "viewer", pool.RoleAdmin)
		}, pool.ErrOutOfRole, "cannot make a device an admin"},
		{"the removed device readmits itself", func(f *fixture) pool.Record {
			return readmit(f, "viewer", "viewer", pool.RoleViewer)
		}, pool.ErrRemoved, "signer"},
		{"a stranger readmits", func(f *fixture) pool.Record {
			return readmit(f, "stranger", "viewer", pool.RoleViewer)
		}, pool.ErrForged, "not a member"},
		{"a member is readmitted", func(f *fixture) pool.Record {
			return readmit(f, "creator", "member", pool.RoleMember)
		}, pool.ErrReplayed, "is a member"},
		{"a device never admitted is readmitted", func(f *fixture) pool.Record {
			return readmit(f, "creator", "stranger", pool.RoleMember)
		}, pool.ErrNoMember, "not in the pool"},
		{"a readmission naming no state", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: kindReadmit, Subject: f.id("viewer"), Role: pool.RoleViewer, Prev: []string{}})
		}, pool.ErrReplayed, "legacy format"},
		{"a readmission with no role", func(f *fixture) pool.Record {
			return readmit(f, "creator", "viewer", "")
		}, pool.ErrMalformed, "role"},
		{"a readmission that renames", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: kindReadmit, Subject: f.id("viewer"), Role: pool.RoleViewer, Name: "mallory"})
		}, pool.ErrMalformed, "name"},
		{"a readmission of the version far ahead", func(f *fixture) pool.Record {
			r := readmit(f, "creator", "viewer", pool.RoleViewer)
			r.Version += uint64(2 * pool.MaxSkew.Milliseconds())
			return signed(r, f.keys["creator"])
		}, pool.ErrFuture, "ahead of the clock"},
	}
	runRefusals(t, tests, func(f *fixture) { f.apply(f.remove("admin", "viewer")) })
}

// refusal is a record an attacker makes against a fixture, and the
// sentinel and rule its refusal names (want nil: it is accepted).
type refusal struct {
	name string
	make func(f *fixture) pool.Record
	want error
	rule string
}

// runRefusals applies each record of tests to a new fixture (after setup):
// each is refused with its sentinel, naming its rule, and leaves the log
// as it was, or is accepted where it wants no error.
func runRefusals(t *testing.T, tests []refusal, setup func(f *fixture)) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, false)
			if setup != nil {
				setup(f)
			}
			r := tt.make(f)
			before := summary(f.l)
			members := f.l.Members()
			_, err := f.l.Apply(r, f.now)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Apply = %v; want it accepted", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.rule) {
				t.Fatalf("Apply = %v; want %v naming %q", err, tt.want, tt.rule)
			}
			if summary(f.l) != before || !reflect.DeepEqual(f.l.Members(), members) {
				t.Errorf("the refused record changed the log")
			}
		})
	}
}

// TestReadmitConcurrent: a readmission takes effect only where it saw
// every removal of its subject and its signer held its right. One
// concurrent with another removal of its subject (an owner's, from a
// state before the first), or with its signer's demotion, is held without
// effect on every replica, whatever its version: the device stays out.
func TestReadmitConcurrent(t *testing.T) {
	t.Run("another removal", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		heads := f.l.Heads()
		first := f.remove("admin", "member")
		f.apply(first)
		back := readmit(f, "owner2", "member", pool.RoleMember)
		f.apply(back)
		second := f.record("creator", pool.Record{Kind: pool.KindRemove, Subject: f.id("member"), Prev: heads})
		f.apply(second)
		for i, l := range everyOrder(t, f, base, first, back, second) {
			if m, _ := l.Member(f.id("member")); !m.Removed {
				t.Errorf("replica %d: member %+v; want removed (the owner's removal was not seen)", i, m)
			}
			if _, void := l.Superseded()[back.Hash()]; !void {
				t.Errorf("replica %d: the readmission has effect", i)
			}
		}
	})
	t.Run("its signer demoted", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		first := f.remove("admin", "member")
		f.apply(first)
		heads := f.l.Heads()
		back := readmit(f, "admin", "member", pool.RoleMember)
		f.apply(back)
		demote := f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("admin"), Role: pool.RoleMember, Prev: heads})
		back.Version += 1_000 // a later time it chose gives it nothing
		back = signed(back, f.keys["admin"])
		for i, l := range everyOrder(t, f, base, first, demote, back) {
			if m, _ := l.Member(f.id("member")); !m.Removed {
				t.Errorf("replica %d: member %+v; want removed (its readmitter was demoted meanwhile)", i, m)
			}
		}
	})
}
