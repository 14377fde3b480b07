package daemon

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/sync/pool"
)

// TestCreateReturnsItsInvite: `pool create` says what the invite the daemon
// made allows, as its log holds it, not what the CLI assumes.
func TestCreateReturnsItsInvite(t *testing.T) {
	ctx := t.Context()
	d := openDaemon(t, "lab1")
	before := time.Now()
	code, err := d.members.Create(ctx, app.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pool.ParseCode(code.Code)
	if err != nil {
		t.Fatal(err)
	}
	if want := pool.InviteID(pool.InviteKey(c.Secret).Public().(ed25519.PublicKey)); code.Invite.ID != want {
		t.Errorf("the invite returned is %q; want %q, that of the code", code.Invite.ID, want)
	}
	st, err := d.members.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Invites) != 1 {
		t.Fatalf("the pool holds %d invites; want 1", len(st.Invites))
	}
	held, got := st.Invites[0], code.Invite
	if got.ID != held.ID || got.Role != held.Role || got.Uses != held.Uses || !got.Expires.Equal(held.Expires) || got.State != "active" {
		t.Errorf("Create returned %+v; the log holds %+v", got, held)
	}
	if got.Role != "member" || got.Uses != pool.CreateInviteUses || got.Expires.Before(before.Add(pool.DefaultInviteTTL-time.Second)) {
		t.Errorf("the first invite is %+v; want member, %d uses, %s", got, pool.CreateInviteUses, pool.DefaultInviteTTL)
	}
}
