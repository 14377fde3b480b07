package pool_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/transport"
)

// TestJoinThroughAMemberMachine: a member's machine signs no admission; a
// joiner that finds it first by mDNS goes on to an admin's or owner's, and
// one that finds members' machines alone is told to ask an admin's.
func TestJoinThroughAMemberMachine(t *testing.T) {
	owner, member := newDevice(t, "lab1", nil), newDevice(t, "gpu2", nil)
	code := create(t, owner)
	if err := member.m.Join(ctxT(t), code, owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	tell(t, owner, member)
	j := newDevice(t, "laptop", func(string) []string { return []string{member.addr(), owner.addr()} })
	if err := j.m.Join(ctxT(t), code, "", ""); err != nil {
		t.Fatalf("Join through a member's machine then the owner's: %v", err)
	}
	st, _ := j.m.Snapshot()
	for _, ms := range st.Members {
		if ms.ID == j.id.ID.String() && ms.AdmittedBy != owner.id.ID.String() {
			t.Errorf("laptop admitted by %s; want the owner", ms.AdmittedBy)
		}
	}
	k := newDevice(t, "k", func(string) []string { return []string{member.addr()} })
	if err := k.m.Join(ctxT(t), code, "", ""); !errors.Is(err, pool.ErrNotAdmitter) {
		t.Errorf("Join through a member's machine alone = %v; want ErrNotAdmitter", err)
	}
	if _, ok := member.m.Role(k.id.ID); ok {
		t.Errorf("the member's machine admitted k")
	}
}

// TestInviteDefaults: an invite is good for one join and a day unless asked
// otherwise, never for unlimited joins; the pool's first one says its uses.
func TestInviteDefaults(t *testing.T) {
	owner := newDevice(t, "lab1", nil)
	first, _, err := owner.m.Create(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if first.Uses != pool.CreateInviteUses || first.Role != pool.RoleMember || first.Expires.Sub(first.CreatedAt) != pool.DefaultInviteTTL {
		t.Errorf("first invite: %d uses, role %s, lasts %s; want %d, member, %s", first.Uses, first.Role,
			first.Expires.Sub(first.CreatedAt), pool.CreateInviteUses, pool.DefaultInviteTTL)
	}
	inv, _, err := owner.m.Invite(ctxT(t), pool.RoleViewer, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Uses != 1 || inv.Expires.Sub(inv.CreatedAt) != 24*time.Hour {
		t.Errorf("invite by default: %d uses, lasts %s; want 1 and 24h", inv.Uses, inv.Expires.Sub(inv.CreatedAt))
	}
	if _, _, err := owner.m.Invite(ctxT(t), pool.RoleViewer, pool.MaxInviteUses+1, time.Hour); err == nil {
		t.Errorf("an invite of %d uses was made; want refused", pool.MaxInviteUses+1)
	}
}

// TestJoinerRefusesExpiredAdmission is an attack: an admitter that answers
// a join signs the joiner's admission on an invite expired hours ago,
// naming the state and a version from before the expiry. The members
// refuse that admission when it reaches them; the joiner, which receives
// it now too, must refuse it as well, by its own clock, rather than enter
// a pool whose members do not count it in.
func TestJoinerRefusesExpiredAdmission(t *testing.T) {
	behind := func(c *pool.ManagerConfig) { c.Now = func() time.Time { return time.Now().Add(-3 * time.Hour) } }
	owner, evil := newDevice(t, "lab1", nil, behind), newDevice(t, "evil", nil)
	create(t, owner)
	if err := evil.m.Join(ctxT(t), invite(t, owner, pool.RoleAdmin, 1, 5*time.Hour), owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	code := invite(t, owner, pool.RoleMember, 1, time.Hour) // expired 2 h ago by every clock but the owner's
	tell(t, owner, evil)
	addr := serveJoin(t, evil, func(w http.ResponseWriter, r *http.Request) {
		var req pool.JoinRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Error(err)
			return
		}
		raws, _ := evil.m.Records()
		adm := signAdmission(t, evil, req, func(inv pool.InviteState) uint64 { return inv.Version + 1 })
		b, _ := json.Marshal(adm)
		json.NewEncoder(w).Encode(pool.JoinResponse{PoolID: code.Pool.String(), Records: append(raws, b), Name: "evil"})
	})
	j := newDevice(t, "laptop", nil)
	err := j.m.Join(ctxT(t), code, addr, "")
	if !errors.Is(err, pool.ErrInvite) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("Join on an admission of an expired invite = %v; want ErrInvite, naming the expiry", err)
	}
	if id, ok := j.m.PoolID(); ok {
		t.Errorf("the joiner entered pool %s on an admission of an expired invite", id)
	}
}

// serveJoin serves h at d's identity on an endpoint of its own, as a
// machine that answers joins its own way; it returns its address.
func serveJoin(t *testing.T, d *device, h http.HandlerFunc) string {
	t.Helper()
	cfg := transport.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	ep, err := transport.New(d.id, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ep.Serve(ctx, h)
	}()
	t.Cleanup(func() {
		cancel()
		ep.Close()
		<-done
	})
	return ep.Addr().String()
}

// signAdmission signs with d's key, bypassing its Manager, the admission
// of req on the state d's log is in, at the version that version picks for
// the invite: what a hostile machine signs.
func signAdmission(t *testing.T, d *device, req pool.JoinRequest, version func(pool.InviteState) uint64) pool.Record {
	t.Helper()
	raws, _ := d.m.Records()
	var recs []pool.Record
	for _, b := range raws {
		rec, err := pool.DecodeRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	l, err := pool.Verify(mustPool(t, d), recs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := l.Invite(req.Invite)
	adm := pool.Record{Pool: l.Pool(), Kind: pool.KindJoin, Subject: peer.NewID(req.Key).String(),
		Version: version(inv), Role: inv.Role, Name: req.Name, Key: req.Key, Invite: req.Invite,
		Signer: d.id.ID.String(), Prev: l.Heads(), Proof: req.Proof}
	adm.Sig = ed25519.Sign(d.id.Cert.PrivateKey.(ed25519.PrivateKey), adm.SigningBytes())
	return adm
}

// TestMemberSignedAdmissionRefused is an attack: a member holding a code
// signs the admission of a device of its own, bypassing its Manager (which
// answers not_admitter), and relays it. In a pool made by this version,
// only admins and owners sign admissions: every machine refuses it.
func TestMemberSignedAdmissionRefused(t *testing.T) {
	owner, member := newDevice(t, "lab1", nil), newDevice(t, "gpu2", nil)
	code := create(t, owner)
	if err := member.m.Join(ctxT(t), code, owner.addr(), ""); err != nil {
		t.Fatal(err)
	}
	_, puppetKey, _ := ed25519.GenerateKey(nil)
	req, err := pool.NewJoinRequest(code, puppetKey.Public().(ed25519.PublicKey), "puppet", "")
	if err != nil {
		t.Fatal(err)
	}
	adm := signAdmission(t, member, req, func(pool.InviteState) uint64 { return uint64(time.Now().UnixMilli()) })
	b, _ := json.Marshal(adm)
	if err := owner.m.Receive(ctxT(t), member.id.ID, []json.RawMessage{b}); err != nil {
		t.Fatal(err)
	}
	puppet := peer.NewID(puppetKey.Public().(ed25519.PublicKey))
	if _, ok := owner.m.Role(puppet); ok {
		t.Errorf("the owner admitted a device on a member's admission")
	}
	if logs := owner.logs.String(); !strings.Contains(logs, "only admins and owners sign admissions") {
		t.Errorf("the drop does not name the rule:\n%s", logs)
	}
}
