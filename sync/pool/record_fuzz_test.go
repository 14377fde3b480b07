package pool_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
)

// refusals are the sentinels a refused record wraps.
var refusals = []error{pool.ErrForged, pool.ErrReplayed, pool.ErrOutOfRole, pool.ErrFuture, pool.ErrInvite,
	pool.ErrRemoved, pool.ErrNoMember, pool.ErrNoGenesis, pool.ErrMalformed}

func isRefusal(err error) bool {
	for _, s := range refusals {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// signerKey returns the public key that must have signed r for l to accept it.
func signerKey(l *pool.Log, r pool.Record) ed25519.PublicKey {
	if r.Kind == pool.KindJoin && !r.Linked() {
		inv, _ := l.Invite(r.Invite)
		return inv.Key
	}
	m, _ := l.Member(r.Signer)
	return m.Key
}

// fuzzRecords returns records a seeded fixture may accept, and some it refuses.
func fuzzRecords(f *fixture) []pool.Record {
	f.keys["new1"], f.keys["new2"] = f.newKey("new1"), f.newKey("new2")
	inv, _ := f.invite("owner2", pool.RoleViewer, 2, time.Hour)
	return []pool.Record{
		admission(f, "member", f.codes[pool.RoleViewer], "new2", f.now), // a member's, as logs of before the rule hold
		f.role("creator", "member", pool.RoleAdmin),
		f.role("admin", "viewer", pool.RoleMember),
		f.remove("admin", "member"),
		f.remove("viewer", "viewer"),
		f.record("owner2", pool.Record{Kind: pool.KindRevoke, Subject: inviteOf(f.codes[pool.RoleMember])}),
		inv,
		joinRecord(f, f.codes[pool.RoleMember], "new1"),
		f.record("member", pool.Record{Kind: pool.KindRemove, Subject: f.id("admin")}),
		rulesRecord(f, "owner2"),
		f.record("owner2", pool.Record{Kind: pool.KindReadmit, Subject: f.id("viewer"), Role: pool.RoleViewer}), // of a member: refused
		f.record("member", pool.Record{Kind: pool.KindReadmit, Subject: f.id("admin"), Role: pool.RoleMember}),
		f.record("owner2", pool.Record{Kind: pool.Kind("merge"), Subject: f.id("viewer"), Person: f.id("member")}),
		f.record("admin", pool.Record{Kind: pool.KindRemove, Subject: f.id("viewer"), Person: f.id("viewer")}),
		f.record("member", pool.Record{Kind: pool.KindRemove, Subject: f.id("member"), Person: f.id("member")}),
		f.l.Records()[0],
	}
}

func FuzzApplyRecord(f *testing.F) {
	fx := newFixture(f, true)
	for _, r := range fuzzRecords(fx) {
		b, _ := json.Marshal(r)
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"genesis"}`))
	f.Add([]byte(`{"pool":"0000000000000000","kind":"role","v":18446744073709551615}`))
	base, now := fx.l, fx.now
	f.Fuzz(func(t *testing.T, data []byte) {
		var r pool.Record
		if json.Unmarshal(data, &r) != nil {
			return
		}
		l := base.Clone()
		key := signerKey(l, r)
		changed, err := l.Apply(r, now)
		if err != nil {
			if changed || !isRefusal(err) {
				t.Fatalf("Apply = %v, %v; want false and a refusal", changed, err)
			}
			return
		}
		if !changed {
			return
		}
		if len(key) != ed25519.PublicKeySize || !ed25519.Verify(key, r.SigningBytes(), r.Sig) {
			t.Fatalf("accepted a record not signed by its signer's key: %+v", r)
		}
		again, err := pool.Verify(l.Pool(), l.Records(), now)
		if err != nil || !reflect.DeepEqual(again.Members(), l.Members()) {
			t.Fatalf("the log after Apply does not verify to the same state: %v", err)
		}
	})
}

func FuzzVerifyLog(f *testing.F) {
	fx := newFixture(f, true)
	good := fx.l.Records()
	b, _ := json.Marshal(good)
	f.Add(b)
	b, _ = json.Marshal(append(good, fuzzRecords(fx)...))
	f.Add(b)
	b, _ = json.Marshal(good[1:])
	f.Add(b)
	f.Add([]byte(`[]`))
	pool0, now := fx.l.Pool(), fx.now
	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []pool.Record
		if json.Unmarshal(data, &recs) != nil || len(recs) > 64 {
			return
		}
		l, err := pool.Verify(pool0, recs, now)
		if err != nil {
			if !isRefusal(err) {
				t.Fatalf("Verify error %v wraps no refusal", err)
			}
			return
		}
		for _, r := range l.Records() {
			if r.Kind == pool.KindGenesis {
				continue
			}
			if key := signerKey(l, r); !ed25519.Verify(key, r.SigningBytes(), r.Sig) {
				t.Fatalf("Verify accepted a record its signer did not sign: %+v", r)
			}
		}
		if l.Creator() != fx.id("creator") {
			t.Fatalf("Verify accepted a log of another creator")
		}
	})
}

// FuzzSigningBytes checks that two records with the same signing bytes are
// the same record: no field's bytes can be moved into another's.
func FuzzSigningBytes(f *testing.F) {
	f.Add("role", "ab", "c", []byte{1}, uint64(1), "", "", "role", "a", "bc", []byte{1}, uint64(1), "", "")
	f.Add("join", "ab", "c", []byte{1}, uint64(1), "al", "", "join", "ab", "c", []byte{1}, uint64(1), "", "al")
	f.Fuzz(func(t *testing.T, k1, s1, n1 string, key1 []byte, v1 uint64, as1, p1 string, k2, s2, n2 string, key2 []byte, v2 uint64, as2, p2 string) {
		a := pool.Record{Kind: pool.Kind(k1), Subject: s1, Name: n1, Key: key1, Version: v1, Signer: n1, As: as1, Person: p1}
		b := pool.Record{Kind: pool.Kind(k2), Subject: s2, Name: n2, Key: key2, Version: v2, Signer: n2, As: as2, Person: p2}
		same := k1 == k2 && s1 == s2 && n1 == n2 && bytes.Equal(key1, key2) && v1 == v2 && as1 == as2 && p1 == p2
		if bytes.Equal(a.SigningBytes(), b.SigningBytes()) != same {
			t.Fatalf("SigningBytes equal = %v for %+v and %+v", !same, a, b)
		}
	})
}

// FuzzInviteCode checks that whatever code parses, the join it signs
// names the invite its secret seeds, and verifies under that invite's key.
func FuzzInviteCode(f *testing.F) {
	c, _ := pool.NewCode()
	f.Add(c.String())
	f.Add("")
	joiner := pubOf(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	f.Fuzz(func(t *testing.T, s string) {
		code, err := pool.ParseCode(s)
		if err != nil {
			return
		}
		r, err := pool.NewJoinRequest(code, joiner, "j", "")
		if err != nil {
			t.Fatal(err)
		}
		pub := pubOf(pool.InviteKey(code.Secret))
		subject := peer.NewID(joiner).String()
		if r.Invite != pool.InviteID(pub) || !ed25519.Verify(pub, pool.JoinProofBytes(code.Pool, subject, "j", joiner, r.Invite, ""), r.Proof) {
			t.Fatalf("join request of code %s: %+v", code, r)
		}
	})
}

// BenchmarkVerifyRecord measures the check of one record against a pool of
// 20 members: what every member pays for each change it receives.
func BenchmarkVerifyRecord(b *testing.B) {
	fx := newFixture(b, true)
	for i := range 15 {
		name := fmt.Sprintf("extra%d", i)
		fx.keys[name] = fx.newKey(name)
		fx.apply(joinRecord(fx, fx.codes[pool.RoleMember], name))
	}
	if n := len(fx.l.Members()); n != 20 {
		b.Fatalf("%d members", n)
	}
	recs := map[string]pool.Record{
		"role":   fx.role("admin", "extra3", pool.RoleViewer),
		"join":   joinRecord(fx, fx.codes[pool.RoleViewer], "stranger"),
		"forged": signed(fx.role("admin", "extra3", pool.RoleViewer), fx.keys["stranger"]),
	}
	for _, kind := range []string{"role", "join", "forged"} {
		b.Run(kind, func(b *testing.B) {
			r := recs[kind]
			for b.Loop() {
				fx.l.Check(r, fx.now)
			}
		})
	}
	b.Run("apply", func(b *testing.B) {
		r := recs["role"]
		for b.Loop() {
			b.StopTimer()
			l := fx.l.Clone()
			b.StartTimer()
			if _, err := l.Apply(r, fx.now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify log", func(b *testing.B) {
		all := fx.l.Records()
		for b.Loop() {
			if _, err := pool.Verify(fx.l.Pool(), all, fx.now); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(all)), "ns/record")
	})
}

// FuzzAdmit feeds join requests as a stranger may send them to a member:
// each is refused with a rule, or admitted as exactly the device whose key
// the session proved, with the role of its invite, and the admission
// verifies on every replica.
func FuzzAdmit(f *testing.F) {
	fx := newFixture(f, true)
	joiner := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	good, _ := pool.NewJoinRequest(fx.codes[pool.RoleViewer], pubOf(joiner), "joiner", "")
	for _, req := range []pool.JoinRequest{good, {PoolID: good.PoolID, Name: "x", Key: good.Key, Invite: good.Invite}, {}} {
		b, _ := json.Marshal(req)
		f.Add(b)
	}
	base, now := fx.l, fx.now
	f.Fuzz(func(t *testing.T, data []byte) {
		var req pool.JoinRequest
		if json.Unmarshal(data, &req) != nil {
			return
		}
		l := base.Clone()
		r, err := l.Admit(fx.keys["admin"], req, pubOf(joiner), now)
		if err != nil {
			if !isRefusal(err) {
				t.Fatalf("Admit error %v wraps no refusal", err)
			}
			return
		}
		inv, _ := l.Invite(req.Invite)
		if r.Subject != peer.NewID(pubOf(joiner)).String() || r.Role != inv.Role {
			t.Fatalf("admitted %s as %s; want the session's device as %s", r.Subject, r.Role, inv.Role)
		}
		if _, err := l.Apply(r, now); err != nil {
			t.Fatalf("Apply(admission) = %v", err)
		}
		if _, err := pool.Verify(l.Pool(), l.Records(), now); err != nil {
			t.Fatalf("the log with the admission does not verify: %v", err)
		}
	})
}
