package pool_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// rulesRecord is the rules record of device by, on f's log as it is.
func rulesRecord(f *fixture, by string) pool.Record {
	return f.record(by, pool.Record{Kind: pool.KindRules, Subject: f.id(by), Role: pool.RoleAdmin})
}

// everyOrder applies recs, after base, to fresh replicas in the orders a
// network may deliver them (and as a joiner's Verify does), and returns
// the logs.
func everyOrder(t *testing.T, f *fixture, base []pool.Record, recs ...pool.Record) []*pool.Log {
	t.Helper()
	var out []*pool.Log
	rev := slices.Clone(recs)
	slices.Reverse(rev)
	for _, order := range [][]pool.Record{recs, rev} {
		l, err := pool.Verify(f.l.Pool(), base, f.now)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range order {
			if _, err := l.Apply(r, f.now); err != nil {
				t.Fatalf("Apply(%s of %.9s) = %v", r.Kind, r.Subject, err)
			}
		}
		out = append(out, l)
	}
	l, err := pool.Verify(f.l.Pool(), append(slices.Clone(base), recs...), f.now)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return append(out, l)
}

// TestRules: an owner's rules record makes admins and owners the only
// admitters, judged by the causal order alone: a member's admission that
// extends it is refused, one concurrent with it (naming a state from
// before it, whatever its version) is held without effect on every
// replica, and one it extends stands, so a log made before the rules
// resolves as it did.
func TestRules(t *testing.T) {
	puppet := func(f *fixture, name string) {
		if _, ok := f.keys[name]; !ok {
			f.keys[name] = f.newKey(name)
		}
	}
	t.Run("a log without rules resolves as before", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		puppet(f, "p")
		adm := admission(f, "member", f.codes[pool.RoleMember], "p", f.now.Add(time.Second))
		for _, l := range everyOrder(t, f, base, adm) {
			if m, ok := l.Member(f.id("p")); !ok || m.AdmittedBy != f.id("member") || l.AdminsAdmit() {
				t.Errorf("a member's admission in a log without rules: member %v; want admitted by the member, as before", ok)
			}
		}
	})
	t.Run("a member's admission extending the rules is refused", func(t *testing.T) {
		f := newFixture(t, false)
		f.apply(rulesRecord(f, "creator"))
		puppet(f, "p")
		adm := admission(f, "member", f.codes[pool.RoleMember], "p", f.now.Add(time.Second))
		_, err := f.l.Apply(adm, f.now.Add(time.Second))
		if !errors.Is(err, pool.ErrOutOfRole) || !strings.Contains(err.Error(), "only admins and owners sign admissions") {
			t.Errorf("Apply(member's admission after the rules) = %v; want ErrOutOfRole naming the rule", err)
		}
		f.apply(f.admit("admin", "p", f.codes[pool.RoleMember])) // an admin's is taken
	})
	t.Run("a member's admission naming a state before the rules has no effect", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		old := f.l.Clone()
		rules := rulesRecord(f, "creator")
		f.apply(rules)
		puppet(f, "p")
		cur := f.l
		f.l = old
		back := admission(f, "member", f.codes[pool.RoleMember], "p", f.now.Add(-time.Hour)) // dated before the rules, too
		f.l = cur
		for _, l := range everyOrder(t, f, base, rules, back) {
			if _, ok := l.Member(f.id("p")); ok {
				t.Errorf("admitted by a member naming the state before the rules")
			}
			if why := l.Superseded()[back.Hash()]; !strings.Contains(why, "only admins and owners sign admissions") {
				t.Errorf("the member's admission is held %q; want without effect, naming the rule", why)
			}
		}
	})
	t.Run("a member's admission the rules extend stands", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		puppet(f, "p")
		adm := admission(f, "member", f.codes[pool.RoleMember], "p", f.now.Add(time.Second))
		f.apply(adm)
		f.now = f.now.Add(time.Second)
		rules := rulesRecord(f, "creator")
		f.apply(rules)
		for _, l := range everyOrder(t, f, base, adm, rules) {
			if m, ok := l.Member(f.id("p")); !ok || m.Removed || !l.AdminsAdmit() {
				t.Errorf("member p %v, rules %v; want p in the pool, made before the rules", ok, l.AdminsAdmit())
			}
		}
	})
	t.Run("an admin's admission concurrent with the rules stands", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		old := f.l.Clone()
		rules := rulesRecord(f, "creator")
		f.apply(rules)
		puppet(f, "p")
		cur := f.l
		f.l = old
		adm := f.admit("admin", "p", f.codes[pool.RoleMember])
		f.l = cur
		for _, l := range everyOrder(t, f, base, rules, adm) {
			if _, ok := l.Member(f.id("p")); !ok {
				t.Errorf("an admin's admission concurrent with the rules lost its effect")
			}
		}
	})
	t.Run("refused rules", func(t *testing.T) {
		f := newFixture(t, false)
		for _, tt := range []struct {
			name string
			r    pool.Record
			want error
		}{
			{"an admin's", rulesRecord(f, "admin"), pool.ErrOutOfRole},
			{"a member's", rulesRecord(f, "member"), pool.ErrOutOfRole},
			{"for members", f.record("creator", pool.Record{Kind: pool.KindRules, Subject: f.id("creator"), Role: pool.RoleMember}), pool.ErrMalformed},
			{"of another subject", f.record("creator", pool.Record{Kind: pool.KindRules, Subject: f.id("owner2"), Role: pool.RoleAdmin}), pool.ErrMalformed},
		} {
			if _, err := f.l.Apply(tt.r, f.now); !errors.Is(err, tt.want) {
				t.Errorf("Apply(rules %s) = %v; want %v", tt.name, err, tt.want)
			}
		}
		f.apply(rulesRecord(f, "owner2"))
		if _, err := f.l.Apply(rulesRecord(f, "creator"), f.now); !errors.Is(err, pool.ErrReplayed) {
			t.Errorf("Apply(rules again) = %v; want ErrReplayed", err)
		}
	})
}
