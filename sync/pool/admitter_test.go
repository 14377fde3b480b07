package pool_test

import (
	"errors"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// TestJoinThroughAMemberMachine: a member's machine signs no admission; a
// joiner that finds it first by mDNS goes on to an admin's or owner's, and
// one that finds members' machines alone is told to ask an admin's.
func TestJoinThroughAMemberMachine(t *testing.T) {
	owner, member := newDevice(t, "lab1", nil), newDevice(t, "gpu2", nil)
	code := create(t, owner)
	if err := member.m.Join(ctxT(t), code, owner.addr()); err != nil {
		t.Fatal(err)
	}
	tell(t, owner, member)
	j := newDevice(t, "laptop", func(string) []string { return []string{member.addr(), owner.addr()} })
	if err := j.m.Join(ctxT(t), code, ""); err != nil {
		t.Fatalf("Join through a member's machine then the owner's: %v", err)
	}
	st, _ := j.m.Snapshot()
	for _, ms := range st.Members {
		if ms.ID == j.id.ID.String() && ms.AdmittedBy != owner.id.ID.String() {
			t.Errorf("laptop admitted by %s; want the owner", ms.AdmittedBy)
		}
	}
	k := newDevice(t, "k", func(string) []string { return []string{member.addr()} })
	if err := k.m.Join(ctxT(t), code, ""); !errors.Is(err, pool.ErrNotAdmitter) {
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
	first, _, err := owner.m.Create(ctxT(t))
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
