package pool_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
)

// epoch is the fixtures' clock at the genesis.
var epoch = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// fixture is a pool with a creator, a second owner, an admin, a member and
// a viewer, who joined with invites made by the creator.
type fixture struct {
	tb     testing.TB
	seeded bool // deterministic keys, salt and secrets, for fuzzing
	l      *pool.Log
	now    time.Time
	keys   map[string]ed25519.PrivateKey // by device name
	codes  map[pool.Role]pool.Code       // the creator's invite for each role
}

func newFixture(tb testing.TB, seeded bool) *fixture {
	tb.Helper()
	f := &fixture{tb: tb, seeded: seeded, now: epoch, keys: map[string]ed25519.PrivateKey{}, codes: map[pool.Role]pool.Code{}}
	for _, name := range []string{"creator", "owner2", "admin", "member", "viewer", "stranger"} {
		f.keys[name] = f.newKey(name)
	}
	g := f.genesis()
	f.l = pool.NewLog(g.Pool)
	f.apply(g)
	for _, role := range []pool.Role{pool.RoleAdmin, pool.RoleMember, pool.RoleViewer} {
		r, code := f.invite("creator", role, 0, 24*time.Hour)
		f.apply(r)
		f.codes[role] = code
	}
	for _, j := range []struct {
		name string
		role pool.Role
	}{{"owner2", pool.RoleAdmin}, {"admin", pool.RoleAdmin}, {"member", pool.RoleMember}, {"viewer", pool.RoleViewer}} {
		f.apply(f.join(j.name, f.codes[j.role]))
	}
	f.apply(f.role("creator", "owner2", pool.RoleOwner))
	return f
}

func (f *fixture) newKey(name string) ed25519.PrivateKey {
	if f.seeded {
		seed := sha256.Sum256([]byte("fixture " + name))
		return ed25519.NewKeyFromSeed(seed[:])
	}
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		f.tb.Fatal(err)
	}
	return key
}

func (f *fixture) genesis() pool.Record {
	if !f.seeded {
		g, err := pool.NewGenesis(f.keys["creator"], "creator", "", f.now)
		if err != nil {
			f.tb.Fatal(err)
		}
		return g
	}
	salt := bytes.Repeat([]byte{7}, 16)
	pub := pubOf(f.keys["creator"])
	id := peer.NewID(pub)
	return signed(pool.Record{
		Pool: pool.PoolIDFor(id, salt), Kind: pool.KindGenesis, Subject: id.String(), Version: uint64(f.now.UnixMilli()),
		Role: pool.RoleOwner, Name: "creator", Key: pub, Salt: salt, Signer: id.String(),
	}, f.keys["creator"])
}

// invite makes an invite by device by, as the Log does (seeded: with a
// secret of its own).
func (f *fixture) invite(by string, role pool.Role, uses int, ttl time.Duration) (pool.Record, pool.Code) {
	f.tick()
	if !f.seeded {
		r, code, err := f.l.NewInvite(f.keys[by], role, uses, f.now.Add(ttl), f.now)
		if err != nil {
			f.tb.Fatalf("invite by %s for %s: %v", by, role, err)
		}
		return r, code
	}
	code := pool.Code{Pool: f.l.Pool(), Secret: [16]byte{byte(len(f.l.Invites())), byte(uses), 0x5e}}
	pub := pubOf(pool.InviteKey(code.Secret))
	return signed(pool.Record{
		Pool: f.l.Pool(), Kind: pool.KindInvite, Subject: pool.InviteID(pub), Version: f.l.NextVersion(f.now),
		Role: role, Key: pub, Uses: uses, Expires: f.now.Add(ttl).UnixMilli(), Signer: f.id(by), Prev: f.l.Heads(),
	}, f.keys[by]), code
}

// join makes the admission of device name with code, by the creator.
func (f *fixture) join(name string, code pool.Code) pool.Record {
	f.tb.Helper()
	return f.admit("creator", name, code)
}

// admit makes the admission of device name with code, signed by device by.
func (f *fixture) admit(by, name string, code pool.Code) pool.Record {
	f.tb.Helper()
	f.tick()
	req, err := pool.NewJoinRequest(code, pubOf(f.keys[name]), name, "")
	if err != nil {
		f.tb.Fatalf("join request of %s: %v", name, err)
	}
	r, err := f.l.Admit(f.keys[by], req, pubOf(f.keys[name]), f.now)
	if err != nil {
		f.tb.Fatalf("admission of %s by %s: %v", name, by, err)
	}
	return r
}

func (f *fixture) role(by, subject string, role pool.Role) pool.Record {
	f.tick()
	r, err := f.l.NewRole(f.keys[by], f.id(subject), role, f.now)
	if err != nil {
		f.tb.Fatalf("role of %s by %s: %v", subject, by, err)
	}
	return r
}

func (f *fixture) remove(by, subject string) pool.Record {
	f.tick()
	r, err := f.l.NewRemove(f.keys[by], f.id(subject), f.now)
	if err != nil {
		f.tb.Fatalf("remove of %s by %s: %v", subject, by, err)
	}
	return r
}

// record makes a record of any content, signed by device by, at the next version.
func (f *fixture) record(by string, r pool.Record) pool.Record {
	f.tick()
	r.Pool, r.Version, r.Signer = f.l.Pool(), f.l.NextVersion(f.now), f.id(by)
	if r.Prev == nil && r.Kind != pool.KindGenesis {
		r.Prev = f.l.Heads()
	}
	return signed(r, f.keys[by])
}

func (f *fixture) apply(r pool.Record) {
	f.tb.Helper()
	if changed, err := f.l.Apply(r, f.now); err != nil || !changed {
		f.tb.Fatalf("Apply(%s of %.9s by %.9s) = %v, %v; want true, nil", r.Kind, r.Subject, r.Signer, changed, err)
	}
}

func (f *fixture) tick()                 { f.now = f.now.Add(time.Second) }
func (f *fixture) id(name string) string { return peer.NewID(pubOf(f.keys[name])).String() }

func pubOf(key ed25519.PrivateKey) ed25519.PublicKey { return key.Public().(ed25519.PublicKey) }

func signed(r pool.Record, key ed25519.PrivateKey) pool.Record {
	r.Sig = ed25519.Sign(key, r.SigningBytes())
	return r
}

func TestRecordSigningBytesIsInjective(t *testing.T) {
	base := pool.Record{Pool: pool.ID{1}, Kind: pool.KindRole, Subject: "ab", Version: 7, Role: pool.RoleMember, Name: "c", Signer: "s"}
	variants := map[string]func(r *pool.Record){
		"pool":          func(r *pool.Record) { r.Pool[7] = 1 },
		"kind":          func(r *pool.Record) { r.Kind = pool.KindRemove },
		"moved byte":    func(r *pool.Record) { r.Subject, r.Name = "a", "bc" },
		"version":       func(r *pool.Record) { r.Version++ },
		"role":          func(r *pool.Record) { r.Role = pool.RoleAdmin },
		"key":           func(r *pool.Record) { r.Key = []byte{0} },
		"salt not key":  func(r *pool.Record) { r.Salt = []byte{0} },
		"invite":        func(r *pool.Record) { r.Invite = "x" },
		"uses":          func(r *pool.Record) { r.Uses = -1 },
		"expires":       func(r *pool.Record) { r.Expires = 1 },
		"signer":        func(r *pool.Record) { r.Signer = "t" },
		"name to role":  func(r *pool.Record) { r.Role, r.Name = "memberc", "" },
		"empty subject": func(r *pool.Record) { r.Subject, r.Kind = "", "roleab" },
		"as":            func(r *pool.Record) { r.As = "c" },
		"person":        func(r *pool.Record) { r.Person = "c" },
		"name to as":    func(r *pool.Record) { r.Name, r.As = "", "c" },
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			r := base
			change(&r)
			if bytes.Equal(r.SigningBytes(), base.SigningBytes()) {
				t.Errorf("SigningBytes does not change")
			}
		})
	}
	sig := base
	sig.Sig = []byte{1}
	if !bytes.Equal(sig.SigningBytes(), base.SigningBytes()) || sig.Hash() == base.Hash() {
		t.Errorf("Sig must be outside SigningBytes and inside Hash")
	}
	if !bytes.Contains(base.SigningBytes(), []byte("labpool pool record v1")) {
		t.Errorf("SigningBytes lacks the domain label")
	}
}

func TestRecordJSONRoundTrip(t *testing.T) {
	f := newFixture(t, false)
	for _, r := range f.l.Records() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back pool.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if back.Hash() != r.Hash() || !reflect.DeepEqual(back.SigningBytes(), r.SigningBytes()) {
			t.Errorf("round trip of %s changes the record", b)
		}
		if !bytes.Contains(b, []byte(`"pool":"`+f.l.Pool().String()+`"`)) {
			t.Errorf("pool is not in hex text: %s", b)
		}
	}
}

func TestPoolIDForBindsCreator(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	g, err := pool.NewGenesis(key, "lab1", "", epoch)
	if err != nil {
		t.Fatal(err)
	}
	id := peer.NewID(pubOf(key))
	if got := pool.PoolIDFor(id, g.Salt); got != g.Pool {
		t.Errorf("PoolIDFor = %s; genesis makes %s", got, g.Pool)
	}
	if other := pool.PoolIDFor(peer.NewID([]byte("someone else")), g.Salt); other == g.Pool {
		t.Errorf("another creator makes the same pool ID")
	}
	if g.Subject != id.String() || g.Signer != g.Subject || g.Role != pool.RoleOwner || len(g.Salt) != 16 {
		t.Errorf("genesis = %+v", g)
	}
}

func TestInviteKeyIsDerivedFromSecret(t *testing.T) {
	a, b := pool.InviteKey([16]byte{1}), pool.InviteKey([16]byte{2})
	if !a.Equal(pool.InviteKey([16]byte{1})) || a.Equal(b) {
		t.Fatal("InviteKey is not a function of the secret")
	}
	id := pool.InviteID(pubOf(a))
	if len(id) != 16 || id == pool.InviteID(pubOf(b)) {
		t.Errorf("InviteID = %q", id)
	}
}

func TestParseRole(t *testing.T) {
	tests := []struct {
		in      string
		want    pool.Role
		wantErr error
	}{
		{"owner", pool.RoleOwner, nil},
		{"Admin", pool.RoleAdmin, nil},
		{" member ", pool.RoleMember, nil},
		{"viewer", pool.RoleViewer, nil},
		{"root", "", pool.ErrBadRole},
		{"", "", pool.ErrBadRole},
	}
	for _, tt := range tests {
		got, err := pool.ParseRole(tt.in)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("ParseRole(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestInviteState(t *testing.T) {
	exp := epoch.Add(time.Hour)
	tests := []struct {
		name string
		inv  pool.InviteState
		now  time.Time
		want string
	}{
		{"active", pool.InviteState{Expires: exp}, epoch, "active"},
		{"unlimited", pool.InviteState{Expires: exp, Used: 100}, epoch, "active"},
		{"expired", pool.InviteState{Expires: exp}, exp.Add(time.Millisecond), "expired"},
		{"used up", pool.InviteState{Expires: exp, Uses: 2, Used: 2}, epoch, "used up"},
		{"revoked", pool.InviteState{Expires: exp, Uses: 2, Used: 2, Revoked: true}, exp.Add(time.Hour), "revoked"},
	}
	for _, tt := range tests {
		if got := tt.inv.State(tt.now); got != tt.want {
			t.Errorf("%s: State = %q; want %q", tt.name, got, tt.want)
		}
	}
}
