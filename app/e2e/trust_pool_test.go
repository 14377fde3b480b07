//go:build linux

package e2e

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// TestTrustMembership attacks the membership protocol itself, as insiders
// would with their own keys and replicas: a demoted admin backdating a
// removal, a member admitting through a revoked invite by naming the state
// before the revocation, a relayed join of the old format dated before its
// invite expired, and the owner and an admin admitting at once on a one-use invite
// while the pool is split. Each record reaches the pool through the
// attacker's own agent, restarted on the replica it wrote.
func TestTrustMembership(t *testing.T) {
	l := newLAN(t, "lab1", "admin", "member", "j1", "j2", "late")
	lab1, admin, member, j1, j2, late := l.host("lab1"), l.host("admin"), l.host("member"), l.host("j1"), l.host("j2"), l.host("late")
	for _, h := range l.hosts {
		h.agent()
	}
	ids := map[*host]string{}
	for _, h := range l.hosts {
		h.waitDaemon()
		s, err := h.client().Self(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ids[h] = s.ID
	}
	memberCode := lastLine(mustCLI(t, lab1, "pool", "create"))
	adminCode := lastLine(mustCLI(t, lab1, "pool", "invite", "--role", "admin", "--uses", "1"))
	mustCLI(t, admin, "pool", "join", adminCode, lab1.ip+":7420")
	mustCLI(t, member, "pool", "join", memberCode, lab1.ip+":7420")
	pool3 := []*host{lab1, admin, member}
	roles := map[string]string{ids[lab1]: "owner", ids[admin]: "admin", ids[member]: "member"}
	waitFor(t, 20*time.Second, "every member to know every role", func() error { return onAll(pool3, roles) })

	t.Run("a demoted admin backdates a removal", func(t *testing.T) {
		mustCLI(t, lab1, "pool", "role", ids[admin], "member")
		roles[ids[admin]] = "member"
		waitFor(t, 20*time.Second, "the demotion everywhere", func() error { return onAll(pool3, roles) })
		admin.kill()
		short := backdate(t, admin.data, func(l *pool.Log, last pool.Record, key ed25519.PrivateKey) pool.Record {
			if last.Kind != pool.KindRole || last.Subject != ids[admin] {
				t.Fatalf("the last record is a %s of %.9s, not the admin's demotion", last.Kind, last.Subject)
			}
			m, _ := l.Member(ids[member])
			return pool.Record{Kind: pool.KindRemove, Subject: ids[member], Invite: m.Invite, Version: last.Version - 1}
		})
		admin.agent()
		admin.waitDaemon()
		waitFor(t, 20*time.Second, "lab1 to hold the backdated removal without effect", func() error {
			if !strings.Contains(lab1.logText(), short) || !strings.Contains(lab1.logText(), "held without effect") {
				return fmt.Errorf("lab1 has not logged record %s as without effect", short)
			}
			return nil
		})
		if err := onAll(pool3, roles); err != nil {
			t.Errorf("after the backdated removal: %v", err)
		}
		if err := liveNodes(lab1, "member"); err != nil {
			t.Errorf("the member is cut off: %v", err)
		}
	})

	t.Run("an admission naming the state before its invite's revocation", func(t *testing.T) {
		code := lastLine(mustCLI(t, lab1, "pool", "invite", "--uses", "5"))
		parsed, err := pool.ParseCode(code)
		if err != nil {
			t.Fatal(err)
		}
		invite := pool.InviteID(pool.InviteKey(parsed.Secret).Public().(ed25519.PublicKey))
		waitFor(t, 20*time.Second, "the member to know the invite", func() error { return knowsInvite(member, invite) })
		mustCLI(t, lab1, "pool", "revoke", invite)
		waitFor(t, 20*time.Second, "the member to know the revocation", func() error { return knowsRecord(member, pool.KindRevoke, invite) })
		// late is refused at the door, as it should be.
		if out, errOut, rc := late.cli("pool", "join", code, lab1.ip+":7420"); rc == 0 || !strings.Contains(out+errOut, "revoked") {
			t.Fatalf("join with a revoked invite: exit %d: %s%s", rc, out, errOut)
		}
		// The member admits it all the same, naming the state before. Only
		// admins and owners sign admissions (the pool's rules record, which
		// that state extends): its own machine refuses it, naming the rule,
		// and relays nothing (a machine that relays it gets it dropped:
		// sync/pool's TestMemberSignedAdmissionRefused).
		member.kill()
		latePub := identityKey(t, late.data).Public().(ed25519.PublicKey)
		backdate(t, member.data, func(l *pool.Log, last pool.Record, _ ed25519.PrivateKey) pool.Record {
			req, err := pool.NewJoinRequest(parsed, latePub, "late", "")
			if err != nil {
				t.Fatal(err)
			}
			inv, _ := l.Invite(invite)
			return pool.Record{Kind: pool.KindJoin, Subject: ids[late], Role: inv.Role, Name: "late", Key: latePub,
				Invite: invite, Proof: req.Proof, Version: last.Version - 1}
		})
		member.agent()
		member.waitDaemon()
		waitFor(t, 20*time.Second, "the member's machine to refuse the admission by the rule", func() error {
			if !strings.Contains(member.logText(), "only admins and owners sign admissions") {
				return fmt.Errorf("the member's machine has not refused its backdated admission by the rule")
			}
			return nil
		})
		for _, h := range pool3 {
			if st, err := poolStatus(h); err != nil {
				t.Error(err)
			} else if m, ok := st.member(ids[late]); ok && !m.Removed {
				t.Errorf("%s lists late as a member through a revoked invite", h.name)
			}
		}
	})

	t.Run("a relayed join of the old format dated before its invite expired", func(t *testing.T) {
		code := lastLine(mustCLI(t, lab1, "pool", "invite", "--uses", "5", "--expires", "2s"))
		parsed, _ := pool.ParseCode(code)
		invite := pool.InviteID(pool.InviteKey(parsed.Secret).Public().(ed25519.PublicKey))
		waitFor(t, 20*time.Second, "the member to know the invite", func() error { return knowsInvite(member, invite) })
		time.Sleep(2500 * time.Millisecond) // the invite expires
		if out, errOut, rc := late.cli("pool", "join", code, lab1.ip+":7420"); rc == 0 || !strings.Contains(out+errOut, "expired") {
			t.Fatalf("join with an expired invite: exit %d: %s%s", rc, out, errOut)
		}
		member.kill()
		latePub := identityKey(t, late.data).Public().(ed25519.PublicKey)
		var short string
		writeRecords(t, member.data, func(l *pool.Log, _ ed25519.PrivateKey) []pool.Record {
			inv, _ := l.Invite(invite)
			j, err := pool.NewLegacyJoin(parsed, latePub, "late", inv.Role, inv.CreatedAt.Add(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			h := j.Hash()
			short = hex.EncodeToString(h[:4])
			return []pool.Record{j}
		})
		// The member's own agent refuses it from its store; a modified
		// labpool relays it all the same.
		srv := serveForgedRecords(t, member)
		waitFor(t, 20*time.Second, "lab1 to refuse the relayed join", func() error {
			if refusalLines(lab1.logText(), short) == 0 {
				return fmt.Errorf("lab1 has not logged the refusal of %s", short)
			}
			return nil
		})
		srv()
		member.agent()
		member.waitDaemon()
		waitFor(t, 20*time.Second, "the member's agent to refuse its stored join", func() error {
			if !strings.Contains(member.logText(), "stored pool record refused") {
				return fmt.Errorf("not logged")
			}
			return nil
		})
		if st, err := poolStatus(lab1); err != nil {
			t.Fatal(err)
		} else if _, ok := st.member(ids[late]); ok {
			t.Errorf("lab1 lists late after a relayed join of an expired invite")
		}
	})

	t.Run("the owner and an admin admit at once on a one-use invite", func(t *testing.T) {
		// Only admins' and owners' machines admit: the admin demoted
		// above is made an admin again, so that both sides of the split
		// have an admitter.
		mustCLI(t, lab1, "pool", "role", ids[admin], "admin")
		roles[ids[admin]] = "admin"
		waitFor(t, 20*time.Second, "the promotion everywhere", func() error { return onAll(pool3, roles) })
		code := lastLine(mustCLI(t, lab1, "pool", "invite", "--uses", "1"))
		parsed, _ := pool.ParseCode(code)
		invite := pool.InviteID(pool.InviteKey(parsed.Secret).Public().(ed25519.PublicKey))
		waitFor(t, 20*time.Second, "the admin to know the invite", func() error { return knowsInvite(admin, invite) })
		// Split the pool: lab1 and j1 | admin, member and j2.
		a, b := []*host{lab1, j1}, []*host{admin, member, j2}
		split(t, a, b, "add")
		mustCLI(t, j1, "pool", "join", code, lab1.ip+":7420")
		mustCLI(t, j2, "pool", "join", code, admin.ip+":7420")
		split(t, a, b, "del")
		all := []*host{lab1, admin, member, j1, j2}
		want := map[string]string{ids[j1]: "member", ids[j2]: "member"}
		waitFor(t, 30*time.Second, "both admitted everywhere", func() error { return onAll(all, want) })
		st, err := poolStatus(lab1)
		if err != nil {
			t.Fatal(err)
		}
		for _, inv := range st.Invites {
			if inv.ID == invite && (inv.Used != 2 || inv.Uses != 1) {
				t.Errorf("invite used %d of %d; want the log saying 2 of 1", inv.Used, inv.Uses)
			}
		}
		if out := mustCLI(t, lab1, "pool", "invites"); !strings.Contains(out, "concurrent admissions") {
			t.Errorf("pool invites does not say the invite was used twice:\n%s", out)
		}
	})
}

// onAll checks that every host lists each device of want with its role.
func onAll(hosts []*host, want map[string]string) error {
	for _, h := range hosts {
		if err := hasRoles(h, want); err != nil {
			return err
		}
	}
	return nil
}

// split cuts (op "add") or heals (op "del") every path between the hosts
// of a and those of b: the ports of b move to a bridge of their own, and
// back.
func split(t testing.TB, a, b []*host, op string) {
	t.Helper()
	l := a[0].lan
	sw := l.prefix + "sw"
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", sw}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	bridge := "br0"
	if op == "add" {
		run("link", "add", "br1", "type", "bridge")
		run("link", "set", "br1", "up")
		bridge = "br1"
	}
	for _, h := range b {
		i := slices.Index(l.hosts, h)
		run("link", "set", fmt.Sprintf("%sp%d", l.prefix, i), "master", bridge)
	}
	if op == "del" {
		run("link", "del", "br1")
	}
}

// knowsInvite reports whether h's daemon accepted the invite record of
// invite (its debug log says so).
func knowsInvite(h *host, invite string) error {
	return knowsRecord(h, pool.KindInvite, invite)
}

// knowsRecord reports whether h's daemon accepted a record of kind about
// subject.
func knowsRecord(h *host, kind pool.Kind, subject string) error {
	for _, line := range strings.Split(h.logText(), "\n") {
		if strings.Contains(line, "pool record accepted") && strings.Contains(line, "kind="+string(kind)) && strings.Contains(line, "subject="+subject) {
			return nil
		}
	}
	return fmt.Errorf("%s has not accepted a %s record of %s", h.name, kind, subject)
}

// identityKey returns the device key kept in dir.
func identityKey(t *testing.T, dir string) ed25519.PrivateKey {
	t.Helper()
	id, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	return id.Cert.PrivateKey.(ed25519.PrivateKey)
}

// backdate writes into the replica in dir (its daemon stopped) the record
// that make returns, signed with the device's key, naming as its parents
// the heads of the log without its latest record (the state before the
// restriction the attacker wants to escape). It returns the short hash.
func backdate(t *testing.T, dir string, make func(l *pool.Log, last pool.Record, key ed25519.PrivateKey) pool.Record) string {
	t.Helper()
	var short string
	writeRecords(t, dir, func(l *pool.Log, key ed25519.PrivateKey) []pool.Record {
		recs := l.Records()
		last := recs[len(recs)-1]
		before, err := pool.Verify(l.Pool(), recs[:len(recs)-1], time.Now())
		if err != nil {
			t.Fatalf("the log without its last record: %v", err)
		}
		r := make(before, last, key)
		r.Pool, r.Signer, r.Prev = l.Pool(), peer.NewID(key.Public().(ed25519.PublicKey)).String(), before.Heads()
		r.Sig = ed25519.Sign(key, r.SigningBytes())
		h := r.Hash()
		short = hex.EncodeToString(h[:4])
		return []pool.Record{r}
	})
	return short
}

// writeRecords adds the records that make returns to the replica in dir
// (its daemon stopped), as a modified labpool would keep and relay them.
func writeRecords(t *testing.T, dir string, make func(l *pool.Log, key ed25519.PrivateKey) []pool.Record) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.PoolRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var recs []pool.Record
	var poolID pool.ID
	for _, row := range rows {
		var r pool.Record
		if err := json.Unmarshal(row.Data, &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == pool.KindGenesis {
			poolID = r.Pool
		}
		recs = append(recs, r)
	}
	l, err := pool.Verify(poolID, recs, time.Now())
	if err != nil {
		t.Fatalf("the replica's log: %v", err)
	}
	table, err := db.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range make(l, identityKey(t, dir)) {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		h := r.Hash()
		rows = append(rows, store.PoolRecord{Hash: hex.EncodeToString(h[:]), Version: r.Version, Data: data})
	}
	if err := db.SavePool(ctx, rows, table); err != nil {
		t.Fatal(err)
	}
}
