package pool_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
)

// TestLogRefusesAttacks tries every rule as an attacker would: each record
// must be refused with its sentinel and leave the log as it was.
func TestLogRefusesAttacks(t *testing.T) {
	tests := []struct {
		name string
		make func(f *fixture) pool.Record
		want error
	}{
		{"member removes another member", func(f *fixture) pool.Record {
			return f.record("member", pool.Record{Kind: pool.KindRemove, Subject: f.id("viewer")})
		}, pool.ErrOutOfRole},
		{"member tombstones an admin", func(f *fixture) pool.Record {
			return f.record("member", pool.Record{Kind: pool.KindRemove, Subject: f.id("admin")})
		}, pool.ErrOutOfRole},
		{"member forges the creator's signature", func(f *fixture) pool.Record {
			r := f.record("member", pool.Record{Kind: pool.KindRemove, Subject: f.id("viewer")})
			r.Signer = f.id("creator")
			return signed(r, f.keys["member"])
		}, pool.ErrForged},
		{"member raises its own role", func(f *fixture) pool.Record {
			return f.record("member", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleOwner})
		}, pool.ErrOutOfRole},
		{"viewer makes itself a member", func(f *fixture) pool.Record {
			return f.record("viewer", pool.Record{Kind: pool.KindRole, Subject: f.id("viewer"), Role: pool.RoleMember})
		}, pool.ErrOutOfRole},
		{"admin raises its own role", func(f *fixture) pool.Record {
			return f.record("admin", pool.Record{Kind: pool.KindRole, Subject: f.id("admin"), Role: pool.RoleOwner})
		}, pool.ErrOutOfRole},
		{"admin makes a member an admin", func(f *fixture) pool.Record {
			return f.record("admin", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleAdmin})
		}, pool.ErrOutOfRole},
		{"admin removes an owner", func(f *fixture) pool.Record {
			return f.record("admin", pool.Record{Kind: pool.KindRemove, Subject: f.id("owner2")})
		}, pool.ErrOutOfRole},
		{"admin demotes an owner", func(f *fixture) pool.Record {
			return f.record("admin", pool.Record{Kind: pool.KindRole, Subject: f.id("owner2"), Role: pool.RoleViewer})
		}, pool.ErrOutOfRole},
		{"owner removes the creator", func(f *fixture) pool.Record {
			return f.record("owner2", pool.Record{Kind: pool.KindRemove, Subject: f.id("creator")})
		}, pool.ErrOutOfRole},
		{"owner demotes the creator", func(f *fixture) pool.Record {
			return f.record("owner2", pool.Record{Kind: pool.KindRole, Subject: f.id("creator"), Role: pool.RoleAdmin})
		}, pool.ErrOutOfRole},
		{"creator removes itself", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: pool.KindRemove, Subject: f.id("creator")})
		}, pool.ErrOutOfRole},
		{"admin makes an admin invite", func(f *fixture) pool.Record {
			r, _ := inviteRecord(f, "admin", pool.RoleAdmin)
			return r
		}, pool.ErrOutOfRole},
		{"owner makes an owner invite", func(f *fixture) pool.Record {
			r, _ := inviteRecord(f, "owner2", pool.RoleOwner)
			return r
		}, pool.ErrOutOfRole},
		{"member makes an invite", func(f *fixture) pool.Record {
			r, _ := inviteRecord(f, "member", pool.RoleViewer)
			return r
		}, pool.ErrOutOfRole},
		{"admin revokes an admin invite", func(f *fixture) pool.Record {
			return f.record("admin", pool.Record{Kind: pool.KindRevoke, Subject: inviteOf(f.codes[pool.RoleAdmin])})
		}, pool.ErrOutOfRole},
		{"version at its maximum", func(f *fixture) pool.Record {
			r := f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer})
			r.Version = math.MaxUint64
			return signed(r, f.keys["creator"])
		}, pool.ErrFuture},
		{"version 11 minutes ahead", func(f *fixture) pool.Record {
			r := f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer})
			r.Version = uint64(f.now.Add(11 * time.Minute).UnixMilli())
			return signed(r, f.keys["creator"])
		}, pool.ErrFuture},
		{"role record older than the subject's join", func(f *fixture) pool.Record {
			r := f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("viewer"), Role: pool.RoleMember})
			r.Version = uint64(epoch.UnixMilli()) + 1
			return signed(r, f.keys["creator"])
		}, pool.ErrReplayed},
		{"join past expiry", func(f *fixture) pool.Record {
			r, code := f.invite("creator", pool.RoleMember, 0, time.Minute)
			f.apply(r)
			f.now = f.now.Add(2 * time.Minute)
			return joinRecord(f, code, "stranger")
		}, pool.ErrInvite},
		{"join past its uses", func(f *fixture) pool.Record {
			r, code := f.invite("creator", pool.RoleMember, 1, time.Hour)
			f.apply(r)
			f.apply(joinRecord(f, code, "new1"))
			return joinRecord(f, code, "stranger")
		}, pool.ErrInvite},
		{"join after revocation", func(f *fixture) pool.Record {
			f.apply(f.record("creator", pool.Record{Kind: pool.KindRevoke, Subject: inviteOf(f.codes[pool.RoleMember])}))
			return joinRecord(f, f.codes[pool.RoleMember], "stranger")
		}, pool.ErrInvite},
		{"join with an unknown invite", func(f *fixture) pool.Record {
			return joinRecord(f, pool.Code{Pool: f.l.Pool(), Secret: [16]byte{9}}, "stranger")
		}, pool.ErrUnknownInvite},
		{"join claiming a higher role than its invite", func(f *fixture) pool.Record {
			r := joinRecord(f, f.codes[pool.RoleViewer], "stranger")
			r.Role = pool.RoleAdmin
			return signed(r, f.keys["creator"])
		}, pool.ErrOutOfRole},
		{"join binding another key to the device", func(f *fixture) pool.Record {
			r := joinRecord(f, f.codes[pool.RoleMember], "stranger")
			r.Subject = f.id("member2")
			return signed(r, f.keys["creator"])
		}, pool.ErrForged},
		{"removed device rejoins under its ID", func(f *fixture) pool.Record {
			f.apply(f.remove("admin", "member"))
			r, code := f.invite("creator", pool.RoleMember, 0, time.Hour)
			f.apply(r)
			return joinRecord(f, code, "member")
		}, pool.ErrRemoved},
		{"removed device gets a role", func(f *fixture) pool.Record {
			f.apply(f.remove("admin", "member"))
			return f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleMember})
		}, pool.ErrRemoved},
		{"removed admin signs", func(f *fixture) pool.Record {
			f.apply(f.remove("creator", "admin"))
			return f.record("admin", pool.Record{Kind: pool.KindRemove, Subject: f.id("viewer")})
		}, pool.ErrRemoved},
		{"removed admin's own invite", func(f *fixture) pool.Record {
			r, code := f.invite("admin", pool.RoleMember, 0, time.Hour)
			f.apply(r)
			f.apply(f.remove("creator", "admin"))
			return joinRecord(f, code, "stranger")
		}, pool.ErrInvite},
		{"remover's invite reused by a new identity", func(f *fixture) pool.Record {
			r, code := f.invite("creator", pool.RoleMember, 0, time.Hour)
			f.apply(r)
			f.apply(joinRecord(f, code, "new1"))
			f.apply(f.remove("creator", "new1"))
			return joinRecord(f, code, "stranger")
		}, pool.ErrInvite},
		{"signed by the wrong key", func(f *fixture) pool.Record {
			r := f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer})
			return signed(r, f.keys["stranger"])
		}, pool.ErrForged},
		{"signed by a stranger", func(f *fixture) pool.Record {
			return f.record("stranger", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer})
		}, pool.ErrForged},
		{"moved to another pool", func(f *fixture) pool.Record {
			r := f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer})
			r.Pool[0] ^= 1
			return signed(r, f.keys["creator"])
		}, pool.ErrForged},
		{"second genesis", func(f *fixture) pool.Record {
			g := f.l.Records()[0]
			g.Name, g.Version = "again", g.Version+100
			return signed(g, f.keys["creator"])
		}, pool.ErrReplayed},
		{"invite ID not that of its key", func(f *fixture) pool.Record {
			r, _ := inviteRecord(f, "creator", pool.RoleMember)
			r.Subject = inviteOf(f.codes[pool.RoleMember])
			return signed(r, f.keys["creator"])
		}, pool.ErrMalformed},
		{"role record with a stray field", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer, Uses: 3})
		}, pool.ErrMalformed},
		{"unknown kind", func(f *fixture) pool.Record {
			return f.record("creator", pool.Record{Kind: "promote", Subject: f.id("member")})
		}, pool.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, false)
			f.keys["new1"], f.keys["member2"] = f.newKey("new1"), f.newKey("member2")
			r := tt.make(f)
			before := f.l.Records()
			changed, err := f.l.Apply(r, f.now)
			if changed || !errors.Is(err, tt.want) {
				t.Fatalf("Apply = %v, %v; want false, %v", changed, err, tt.want)
			}
			if !reflect.DeepEqual(f.l.Records(), before) {
				t.Errorf("a refused record changed the log")
			}
			if err := f.l.Check(r, f.now); !errors.Is(err, tt.want) {
				t.Errorf("Check = %v; want %v", err, tt.want)
			}
			t.Log(err)
		})
	}
}

// inviteRecord makes an invite record signed by by, whatever its role.
func inviteRecord(f *fixture, by string, role pool.Role) (pool.Record, pool.Code) {
	code := pool.Code{Pool: f.l.Pool(), Secret: [16]byte{0xaa, byte(len(role))}}
	pub := pubOf(pool.InviteKey(code.Secret))
	return f.record(by, pool.Record{Kind: pool.KindInvite, Subject: pool.InviteID(pub), Role: role, Key: pub,
		Expires: f.now.Add(time.Hour).UnixMilli()}), code
}

func inviteOf(code pool.Code) string { return pool.InviteID(pubOf(pool.InviteKey(code.Secret))) }

// joinRecord makes the join of device name with code, as the joiner does.
func joinRecord(f *fixture, code pool.Code, name string) pool.Record {
	f.tick()
	now := f.now
	if _, ok := f.keys[name]; !ok {
		f.keys[name] = f.newKey(name)
	}
	return admission(f, "creator", code, name, now)
}

// admission makes, without checking it, the admission of device name with
// code, signed by device by at time at.
func admission(f *fixture, by string, code pool.Code, name string, at time.Time) pool.Record {
	req, err := pool.NewJoinRequest(code, pubOf(f.keys[name]), name, "")
	if err != nil {
		f.tb.Fatal(err)
	}
	role := pool.RoleMember
	if inv, ok := f.l.Invite(req.Invite); ok {
		role = inv.Role
	}
	return signed(pool.Record{Pool: f.l.Pool(), Kind: pool.KindJoin, Subject: peer.NewID(req.Key).String(),
		Version: max(uint64(at.UnixMilli()), f.l.NextVersion(at)), Role: role, Name: name, Key: req.Key, Invite: req.Invite,
		Signer: f.id(by), Prev: f.l.Heads(), Proof: req.Proof}, f.keys[by])
}

func TestLogAccepts(t *testing.T) {
	tests := []struct {
		name  string
		make  func(f *fixture) pool.Record
		check func(f *fixture) bool
	}{
		{"owner makes an admin", func(f *fixture) pool.Record { return f.role("owner2", "member", pool.RoleAdmin) },
			func(f *fixture) bool { return role(f, "member") == pool.RoleAdmin }},
		{"owner demotes an owner", func(f *fixture) pool.Record { return f.role("creator", "owner2", pool.RoleViewer) },
			func(f *fixture) bool { return role(f, "owner2") == pool.RoleViewer }},
		{"admin makes a member a viewer", func(f *fixture) pool.Record { return f.role("admin", "member", pool.RoleViewer) },
			func(f *fixture) bool { return role(f, "member") == pool.RoleViewer }},
		{"admin removes a member", func(f *fixture) pool.Record { return f.remove("admin", "member") },
			func(f *fixture) bool { m, _ := f.l.Member(f.id("member")); return m.Removed }},
		{"owner removes an owner", func(f *fixture) pool.Record { return f.remove("creator", "owner2") },
			func(f *fixture) bool { m, _ := f.l.Member(f.id("owner2")); return m.Removed }},
		{"member leaves", func(f *fixture) pool.Record { return f.remove("member", "member") },
			func(f *fixture) bool {
				inv, _ := f.l.Invite(inviteOf(f.codes[pool.RoleMember]))
				m, _ := f.l.Member(f.id("member"))
				return m.Removed && !inv.Revoked // leaving closes no door behind it
			}},
		{"removal revokes the invite it came in by", func(f *fixture) pool.Record { return f.remove("admin", "viewer") },
			func(f *fixture) bool {
				inv, _ := f.l.Invite(inviteOf(f.codes[pool.RoleViewer]))
				return inv.Revoked && inv.State(f.now) == "revoked"
			}},
		{"owner makes an admin invite", func(f *fixture) pool.Record { r, _ := f.invite("owner2", pool.RoleAdmin, 3, time.Hour); return r },
			func(f *fixture) bool { return len(f.l.Invites()) == 4 && f.l.Invites()[0].Uses == 3 }},
		{"admin revokes a member invite", func(f *fixture) pool.Record {
			f.tick()
			r, err := f.l.NewRevoke(f.keys["admin"], inviteOf(f.codes[pool.RoleMember]), f.now)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, func(f *fixture) bool { inv, _ := f.l.Invite(inviteOf(f.codes[pool.RoleMember])); return inv.Revoked }},
		{"join through a member invite", func(f *fixture) pool.Record { return joinRecord(f, f.codes[pool.RoleMember], "stranger") },
			func(f *fixture) bool {
				m, _ := f.l.Member(f.id("stranger"))
				inv, _ := f.l.Invite(inviteOf(f.codes[pool.RoleMember]))
				return m.Role == pool.RoleMember && m.AddedBy == f.id("creator") && inv.Used == 2
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, false)
			f.apply(tt.make(f))
			if !tt.check(f) {
				t.Errorf("state after the record: %+v", f.l.Members())
			}
		})
	}
}

func role(f *fixture, name string) pool.Role {
	m, _ := f.l.Member(f.id(name))
	return m.Role
}

func TestLogState(t *testing.T) {
	f := newFixture(t, false)
	if f.l.Creator() != f.id("creator") {
		t.Errorf("Creator = %q", f.l.Creator())
	}
	ms := f.l.Members()
	if len(ms) != 5 || !slices.IsSortedFunc(ms, func(a, b pool.MemberState) int { return cmpString(a.ID, b.ID) }) {
		t.Fatalf("Members = %+v; want 5 sorted by ID", ms)
	}
	want := map[string]pool.Role{"creator": pool.RoleOwner, "owner2": pool.RoleOwner, "admin": pool.RoleAdmin, "member": pool.RoleMember, "viewer": pool.RoleViewer}
	for name, r := range want {
		m, ok := f.l.Member(f.id(name))
		if !ok || m.Role != r || m.Name != name || peer.NewID(m.Key).String() != m.ID {
			t.Errorf("Member(%s) = %+v, %v; want role %s", name, m, ok, r)
		}
	}
	recs := f.l.Records()
	if !slices.IsSortedFunc(recs, func(a, b pool.Record) int { return int(a.Version) - int(b.Version) }) {
		t.Errorf("Records not in version order")
	}
	if changed, err := f.l.Apply(recs[3], f.now); changed || err != nil {
		t.Errorf("Apply of a held record = %v, %v; want false, nil", changed, err)
	}
	if v := f.l.NextVersion(epoch); v != recs[len(recs)-1].Version+1 {
		t.Errorf("NextVersion(past) = %d; want the highest version + 1", v)
	}
	if v := f.l.NextVersion(f.now.Add(time.Hour)); v != uint64(f.now.Add(time.Hour).UnixMilli()) {
		t.Errorf("NextVersion(future) = %d; want now", v)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestAdmit: the member admitting a device judges its invite now, not at a
// time the joiner names.
func TestAdmit(t *testing.T) {
	f := newFixture(t, false)
	r, code := f.invite("creator", pool.RoleMember, 1, time.Minute)
	f.apply(r)
	req, err := pool.NewJoinRequest(code, pubOf(f.keys["stranger"]), "stranger", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.Admit(f.keys["admin"], req, pubOf(f.keys["stranger"]), f.now.Add(2*time.Minute)); !errors.Is(err, pool.ErrInvite) {
		t.Errorf("Admit after expiry = %v; want ErrInvite", err)
	}
	if _, err := f.l.Admit(f.keys["admin"], req, pubOf(f.keys["viewer"]), f.now); !errors.Is(err, pool.ErrForged) {
		t.Errorf("Admit of a request for another key = %v; want ErrForged", err)
	}
	forged := req
	forged.Name = "mallory"
	if _, err := f.l.Admit(f.keys["admin"], forged, pubOf(f.keys["stranger"]), f.now); !errors.Is(err, pool.ErrForged) {
		t.Errorf("Admit of a request whose name changed = %v; want ErrForged", err)
	}
	a, err := f.l.Admit(f.keys["admin"], req, pubOf(f.keys["stranger"]), f.now)
	if err != nil {
		t.Fatalf("Admit = %v", err)
	}
	f.apply(a)
	if m, ok := f.l.Member(f.id("stranger")); !ok || m.AdmittedBy != f.id("admin") || m.Role != pool.RoleMember {
		t.Errorf("Member = %+v, %v; want admitted by the admin", m, ok)
	}
	f.keys["new1"] = f.newKey("new1")
	req2, _ := pool.NewJoinRequest(code, pubOf(f.keys["new1"]), "new1", "")
	if _, err := f.l.Admit(f.keys["admin"], req2, pubOf(f.keys["new1"]), f.now); !errors.Is(err, pool.ErrInvite) {
		t.Errorf("Admit past the invite's uses = %v; want ErrInvite", err)
	}
}

func TestVerify(t *testing.T) {
	f := newFixture(t, false)
	f.apply(f.remove("admin", "member"))
	recs := f.l.Records()
	rand.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	l, err := pool.Verify(f.l.Pool(), append(recs, recs[0]), f.now)
	if err != nil {
		t.Fatalf("Verify of a good log: %v", err)
	}
	if !reflect.DeepEqual(l.Members(), f.l.Members()) || !reflect.DeepEqual(l.Records(), f.l.Records()) {
		t.Errorf("Verify derives another state")
	}

	t.Run("genesis of another pool", func(t *testing.T) {
		other := f.l.Pool()
		other[0] ^= 1
		if _, err := pool.Verify(other, f.l.Records(), f.now); !errors.Is(err, pool.ErrForged) {
			t.Errorf("Verify = %v; want ErrForged", err)
		}
	})
	t.Run("genesis swapped for the attacker's", func(t *testing.T) {
		_, key, _ := ed25519.GenerateKey(nil)
		g, _ := pool.NewGenesis(key, "evil", "", epoch)
		recs := append([]pool.Record{g}, f.l.Records()[1:]...)
		if _, err := pool.Verify(f.l.Pool(), recs, f.now); !errors.Is(err, pool.ErrForged) {
			t.Errorf("Verify = %v; want ErrForged", err)
		}
	})
	t.Run("no genesis", func(t *testing.T) {
		if _, err := pool.Verify(f.l.Pool(), f.l.Records()[1:], f.now); !errors.Is(err, pool.ErrNoGenesis) {
			t.Errorf("Verify = %v; want ErrNoGenesis", err)
		}
		if _, err := pool.Verify(f.l.Pool(), nil, f.now); !errors.Is(err, pool.ErrNoGenesis) {
			t.Errorf("Verify(nil) = %v; want ErrNoGenesis", err)
		}
	})
	t.Run("member added by a non-admin", func(t *testing.T) {
		g := newFixture(t, false)
		inv, code := inviteRecord(g, "member", pool.RoleMember)
		g.keys["puppet"] = g.newKey("puppet")
		join := admission(g, "member", code, "puppet", g.now.Add(time.Second))
		join.Prev = []string{hashHex(inv)}
		join = signed(join, g.keys["member"])
		recs := append(g.l.Records(), inv, join)
		if _, err := pool.Verify(g.l.Pool(), recs, g.now.Add(time.Minute)); !errors.Is(err, pool.ErrOutOfRole) {
			t.Errorf("Verify = %v; want ErrOutOfRole", err)
		}
	})
	t.Run("tampered record", func(t *testing.T) {
		recs := f.l.Records()
		recs[4].Name = "mallory"
		if _, err := pool.Verify(f.l.Pool(), recs, f.now); !errors.Is(err, pool.ErrForged) {
			t.Errorf("Verify = %v; want ErrForged", err)
		}
	})
}

// TestLogConverges applies the same records in every order a network may
// deliver them, concurrent changes included: every replica ends the same.
func TestLogConverges(t *testing.T) {
	f := newFixture(t, false)
	base := f.l.Records()
	// Two owners act at once: the creator removes the admin, while the
	// admin, not knowing yet, demotes the member; owner2 makes an invite.
	f.tick()
	remove, err := f.l.NewRemove(f.keys["creator"], f.id("admin"), f.now)
	if err != nil {
		t.Fatal(err)
	}
	demote := f.record("admin", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer})
	inv, _ := f.invite("owner2", pool.RoleViewer, 0, time.Hour)
	late := []pool.Record{demote, remove, inv}
	want := ""
	for range 20 {
		rand.Shuffle(len(late), func(i, j int) { late[i], late[j] = late[j], late[i] })
		l, err := pool.Verify(f.l.Pool(), base, f.now)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range late {
			l.Apply(r, f.now) // some are refused in some orders: that is the point
		}
		got := summary(l)
		if want == "" {
			want = got
		} else if got != want {
			t.Fatalf("replicas diverge:\n%s\n%s", want, got)
		}
	}
	t.Log(want)
}

func summary(l *pool.Log) string {
	s := ""
	for _, m := range l.Members() {
		s += m.Name + ":" + string(m.Role) + map[bool]string{true: "(removed)"}[m.Removed] + " "
	}
	for _, r := range l.Records() {
		s += string(r.Kind) + " "
	}
	return s
}

// TestLogConcurrentRemovalVoids: a change that a removed admin signed,
// concurrent with its removal, is held and relayed but has no effect, in
// either order of arrival; nothing accepted is dropped.
func TestLogConcurrentRemovalVoids(t *testing.T) {
	for _, removalFirst := range []bool{false, true} {
		f := newFixture(t, false)
		f.tick()
		remove, err := f.l.NewRemove(f.keys["creator"], f.id("admin"), f.now)
		if err != nil {
			t.Fatal(err)
		}
		demote := f.record("admin", pool.Record{Kind: pool.KindRole, Subject: f.id("member"), Role: pool.RoleViewer})
		order := []pool.Record{demote, remove}
		if removalFirst {
			order = []pool.Record{remove, demote}
		}
		for _, r := range order {
			if changed, err := f.l.Apply(r, f.now); !changed || err != nil {
				t.Fatalf("Apply(%s) = %v, %v", r.Kind, changed, err)
			}
		}
		held := slices.ContainsFunc(f.l.Records(), func(r pool.Record) bool { return r.Hash() == demote.Hash() })
		if _, void := f.l.Superseded()[demote.Hash()]; role(f, "member") != pool.RoleMember || !held || !void {
			t.Errorf("removal first %v: member %s, demotion held %v, void %v; want member, held and void", removalFirst, role(f, "member"), held, void)
		}
	}
}

// TestLogHeldBackRecord: a relay that holds back a record and sends the
// one after it first changes nothing: the later one waits for its parent.
func TestLogHeldBackRecord(t *testing.T) {
	f := newFixture(t, false)
	base := f.l.Records()
	old := f.role("creator", "member", pool.RoleViewer)
	f.apply(old)
	newer := f.role("creator", "member", pool.RoleAdmin)
	l, err := pool.Verify(f.l.Pool(), base, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := l.Apply(newer, f.now); changed || err != nil || l.Pending() != 1 {
		t.Fatalf("Apply(newer, parent missing) = %v, %v, %d pending; want it waiting", changed, err, l.Pending())
	}
	if changed, err := l.Apply(old, f.now); !changed || err != nil || l.Pending() != 0 {
		t.Fatalf("Apply(old) = %v, %v, %d pending", changed, err, l.Pending())
	}
	if m, _ := l.Member(f.id("member")); m.Role != pool.RoleAdmin {
		t.Errorf("role = %s; want admin, the later record's", m.Role)
	}
}

func hashHex(r pool.Record) string {
	h := r.Hash()
	return hex.EncodeToString(h[:])
}

// TestRemoveThenRevoke: the removal revokes the invite the device came in
// by; a revoke record made beside it, from the same state, still applies,
// and a second one does not.
func TestRemoveThenRevoke(t *testing.T) {
	f := newFixture(t, false)
	f.tick()
	inv := inviteOf(f.codes[pool.RoleMember])
	remove, err := f.l.NewRemove(f.keys["admin"], f.id("member"), f.now)
	if err != nil {
		t.Fatal(err)
	}
	revoke, err := f.l.NewRevoke(f.keys["admin"], inv, f.now)
	if err != nil {
		t.Fatal(err)
	}
	f.apply(remove)
	if st, _ := f.l.Invite(inv); !st.Revoked {
		t.Errorf("the removal leaves the device's invite open")
	}
	f.apply(revoke)
	again := f.record("creator", pool.Record{Kind: pool.KindRevoke, Subject: inv})
	if _, err := f.l.Apply(again, f.now); !errors.Is(err, pool.ErrInvite) {
		t.Errorf("second revoke = %v; want ErrInvite", err)
	}
}

// TestLogAttacksOfTheAudit replays the membership attacks of the audit:
// each must leave every replica, whatever the order of delivery, with the
// membership the honest records make.
func TestLogAttacksOfTheAudit(t *testing.T) {
	t.Run("demoted admin backdates a removal", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		old := f.l.Clone() // the state the admin will claim to have seen
		demote := f.role("creator", "admin", pool.RoleMember)
		f.apply(demote)
		// The demoted admin signs "remove member" naming the state before
		// its demotion, dated before it.
		rm := signed(pool.Record{Pool: f.l.Pool(), Kind: pool.KindRemove, Subject: f.id("member"),
			Version: demote.Version - 1, Invite: inviteOf(f.codes[pool.RoleMember]), Signer: f.id("admin"), Prev: old.Heads()}, f.keys["admin"])
		if _, err := f.l.Apply(rm, f.now); err != nil {
			t.Fatalf("the backdated removal is refused: %v; want it held without effect", err)
		}
		for _, l := range everyOrder(t, f, base, demote, rm) {
			m, _ := l.Member(f.id("member"))
			if m.Removed || !strings.Contains(l.Superseded()[rm.Hash()], "does not extend") {
				t.Errorf("member removed %v, superseded %q; want in the pool, the removal void", m.Removed, l.Superseded()[rm.Hash()])
			}
		}
		// Extending its demotion, the same removal is refused outright.
		f.tick()
		rm2 := f.record("admin", pool.Record{Kind: pool.KindRemove, Subject: f.id("member"), Invite: inviteOf(f.codes[pool.RoleMember])})
		if _, err := f.l.Apply(rm2, f.now); !errors.Is(err, pool.ErrOutOfRole) {
			t.Errorf("Apply(removal after demotion) = %v; want ErrOutOfRole", err)
		}
	})
	t.Run("ex-owner backdates demotions of an admin", func(t *testing.T) {
		f := newFixture(t, false)
		inv, code := f.invite("admin", pool.RoleMember, 0, time.Hour)
		f.apply(inv)
		old := f.l.Clone()
		f.keys["new1"] = f.newKey("new1")
		f.apply(f.admit("admin", "new1", code))
		base := f.l.Records()
		demote := f.role("creator", "owner2", pool.RoleMember)
		f.apply(demote)
		back := signed(pool.Record{Pool: f.l.Pool(), Kind: pool.KindRole, Subject: f.id("admin"), Role: pool.RoleViewer,
			Version: demote.Version - 1, Signer: f.id("owner2"), Prev: old.Heads()}, f.keys["owner2"])
		for _, l := range everyOrder(t, f, base, demote, back) {
			m, _ := l.Member(f.id("new1"))
			a, _ := l.Member(f.id("admin"))
			if m.Removed || a.Role != pool.RoleAdmin {
				t.Errorf("new1 removed %v, admin is %s; want new1 in, the admin still admin", m.Removed, a.Role)
			}
		}
	})
	t.Run("admission naming the state before a revocation", func(t *testing.T) {
		f := newFixture(t, false)
		base := f.l.Records()
		old := f.l.Clone()
		revoke := f.record("creator", pool.Record{Kind: pool.KindRevoke, Subject: inviteOf(f.codes[pool.RoleMember])})
		f.apply(revoke)
		f.keys["late"] = f.newKey("late")
		req, _ := pool.NewJoinRequest(f.codes[pool.RoleMember], pubOf(f.keys["late"]), "late", "")
		if _, err := f.l.Admit(f.keys["admin"], req, pubOf(f.keys["late"]), f.now); !errors.Is(err, pool.ErrInvite) {
			t.Fatalf("Admit after revocation = %v; want ErrInvite", err)
		}
		back, err := old.Admit(f.keys["admin"], req, pubOf(f.keys["late"]), f.now)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range everyOrder(t, f, base, revoke, back) {
			if _, ok := l.Member(f.id("late")); ok {
				t.Errorf("admitted through a revoked invite by naming the state before its revocation")
			}
		}
	})
	t.Run("legacy join after the pool moved on", func(t *testing.T) {
		f := newFixture(t, false)
		f.keys["late"] = f.newKey("late")
		j, err := pool.NewLegacyJoin(f.codes[pool.RoleMember], pubOf(f.keys["late"]), "late", "", epoch.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.Apply(j, f.now); !errors.Is(err, pool.ErrReplayed) {
			t.Errorf("Apply(legacy join) = %v; want ErrReplayed", err)
		}
	})
	t.Run("concurrent admissions on a one-use invite", func(t *testing.T) {
		f := newFixture(t, false)
		inv, code := f.invite("creator", pool.RoleMember, 1, time.Hour)
		f.apply(inv)
		base := f.l.Records()
		f.keys["a1"], f.keys["a2"] = f.newKey("a1"), f.newKey("a2")
		one := f.l.Clone()
		a1 := f.admit("owner2", "a1", code)
		f.l, one = one, f.l
		a2 := f.admit("admin", "a2", code)
		f.l = one
		for _, l := range everyOrder(t, f, base, a1, a2) {
			m1, ok1 := l.Member(f.id("a1"))
			m2, ok2 := l.Member(f.id("a2"))
			got, _ := l.Invite(inviteOf(code))
			if !ok1 || !ok2 || m1.Removed || m2.Removed || got.Used != 2 || got.Uses != 1 {
				t.Errorf("a1 %v, a2 %v, invite used %d of %d; want both members and the log saying 2 of 1", ok1, ok2, got.Used, got.Uses)
			}
		}
	})
}
