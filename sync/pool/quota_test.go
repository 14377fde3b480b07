package pool_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// TestFullLogKeepsRoomForRestrictions is the audit's finding: a code of an
// unlimited invite filled the log, and then it refused every record, the
// owner's removal of whoever filled it included.
func TestFullLogKeepsRoomForRestrictions(t *testing.T) {
	f := newFixture(t, false)
	held := len(f.l.Records())
	pool.SetLimits(t, pool.Limits{Log: held + 5, ReserveAdmin: 2, ReserveOwner: 1, AdmitsAdmin: 100, AdmitsMember: 100, Slack: 8})
	for i := range 5 {
		name := fmt.Sprintf("flood%d", i)
		f.keys[name] = f.newKey(name)
		f.apply(f.admit("creator", name, f.codes[pool.RoleMember]))
	}
	f.keys["late"] = f.newKey("late")
	try := func(r pool.Record) error {
		_, err := f.l.Apply(r, f.now)
		return err
	}
	if err := try(joinRecord(f, f.codes[pool.RoleMember], "late")); !errors.Is(err, pool.ErrReplayed) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("an admission into the full log: %v; want refused by the log's limit", err)
	}
	if err := try(f.record("member", pool.Record{Kind: pool.KindRemove, Subject: f.id("member")})); !errors.Is(err, pool.ErrReplayed) {
		t.Errorf("a member leaving the full log: %v; want refused by the log's limit", err)
	}
	// An admin's restrictions fit in its reserve.
	f.apply(f.remove("admin", "flood0"))
	f.apply(f.record("admin", pool.Record{Kind: pool.KindRevoke, Subject: inviteOf(f.codes[pool.RoleViewer])}))
	if err := try(f.record("admin", pool.Record{Kind: pool.KindRemove, Subject: f.id("flood1")})); !errors.Is(err, pool.ErrReplayed) {
		t.Errorf("an admin's removal past its reserve: %v; want refused", err)
	}
	// The owner's fit past the admins' reserve: it removes the admin.
	f.apply(f.remove("creator", "admin"))
	if m, _ := f.l.Member(f.id("admin")); !m.Removed {
		t.Errorf("the owner could not remove an admin from the full log")
	}
}

// TestAdmissionQuotas: one device signs a bounded number of admissions,
// and an invite makes a bounded number, whatever state its admitters name.
func TestAdmissionQuotas(t *testing.T) {
	t.Run("per admitter", func(t *testing.T) {
		f := newFixture(t, false)
		pool.SetLimits(t, pool.Limits{Log: 1000, ReserveAdmin: 10, ReserveOwner: 10, AdmitsAdmin: 3, AdmitsMember: 1, Slack: 8})
		inv, code := f.invite("admin", pool.RoleMember, 10, time.Hour)
		f.apply(inv)
		for i := range 3 {
			name := fmt.Sprintf("n%d", i)
			f.keys[name] = f.newKey(name)
			f.apply(f.admit("admin", name, code))
		}
		f.keys["n3"] = f.newKey("n3")
		r := admission(f, "admin", code, "n3", f.now)
		if _, err := f.l.Apply(r, f.now); !errors.Is(err, pool.ErrOutOfRole) || !strings.Contains(err.Error(), "admissions") {
			t.Errorf("a 4th admission by an admin of limit 3: %v; want ErrOutOfRole naming the admissions", err)
		}
	})
	t.Run("per invite, admitters naming old states", func(t *testing.T) {
		f := newFixture(t, false)
		pool.SetLimits(t, pool.Limits{Log: 1000, ReserveAdmin: 10, ReserveOwner: 10, AdmitsAdmin: 100, AdmitsMember: 100, Slack: 1})
		inv, code := f.invite("creator", pool.RoleMember, 1, time.Hour)
		f.apply(inv)
		old := f.l.Clone()
		var got []error
		for i, by := range []string{"creator", "owner2", "admin"} {
			name := fmt.Sprintf("c%d", i)
			f.keys[name] = f.newKey(name)
			cur := f.l
			f.l = old
			r := admission(f, by, code, name, f.now)
			f.l = cur
			_, err := f.l.Apply(r, f.now)
			got = append(got, err)
		}
		if got[0] != nil || got[1] != nil || !errors.Is(got[2], pool.ErrInvite) {
			t.Errorf("three admissions on a one-use invite of slack 1 = %v; want two accepted, the third ErrInvite", got)
		}
	})
}

// TestExpiredInviteAdmitsNobody is the audit's finding: a member admitted a
// device with an expired invite by naming the state from before its expiry
// (and the version of then). Judged on the receiver's clock when it
// arrives, it is refused; an admission accepted before its invite expired
// stays accepted.
func TestExpiredInviteAdmitsNobody(t *testing.T) {
	f := newFixture(t, false)
	inv, code := f.invite("creator", pool.RoleMember, 5, time.Hour)
	f.apply(inv)
	before := f.now
	old := f.l.Clone()
	f.keys["early"], f.keys["late"] = f.newKey("early"), f.newKey("late")
	f.apply(f.admit("admin", "early", code))
	f.now = f.now.Add(3 * time.Hour)
	f.apply(f.role("creator", "viewer", pool.RoleMember))
	cur := f.l
	f.l = old
	late := admission(f, "admin", code, "late", before.Add(time.Minute))
	f.l = cur
	if _, err := f.l.Apply(late, f.now); !errors.Is(err, pool.ErrInvite) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an admission of an expired invite naming the state before its expiry: %v; want ErrInvite, expired", err)
	}
	if _, ok := f.l.Member(f.id("late")); ok {
		t.Errorf("the late device is a member")
	}
	// Within the grace for clocks, it is accepted; and a whole log holding
	// admissions of an invite expired since verifies.
	f.now = time.UnixMilli(inv.Expires).Add(pool.MaxSkew - time.Second)
	if _, err := old.Apply(late, f.now); err != nil {
		t.Errorf("an admission arriving within MaxSkew of its invite's expiry: %v", err)
	}
	l, err := pool.Verify(f.l.Pool(), f.l.Records(), f.now.Add(24*time.Hour))
	if err != nil {
		t.Fatalf("a log with an admission of an invite expired since: %v", err)
	}
	if m, ok := l.Member(f.id("early")); !ok || m.Removed {
		t.Errorf("the device admitted before the expiry is not a member after a verify")
	}
}

// TestOnlyAdminsAdmit: a member's or viewer's machine signs no admission.
func TestOnlyAdminsAdmit(t *testing.T) {
	f := newFixture(t, false)
	f.keys["new"] = f.newKey("new")
	req, err := pool.NewJoinRequest(f.codes[pool.RoleViewer], pubOf(f.keys["new"]), "new", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{"member", "viewer"} {
		if _, err := f.l.Admit(f.keys[by], req, pubOf(f.keys["new"]), f.now); !errors.Is(err, pool.ErrNotAdmitter) {
			t.Errorf("Admit by a %s = %v; want ErrNotAdmitter", by, err)
		}
	}
	for _, by := range []string{"admin", "creator"} {
		if _, err := f.l.Admit(f.keys[by], req, pubOf(f.keys["new"]), f.now); err != nil {
			t.Errorf("Admit by %s = %v", by, err)
		}
	}
}
