package membership

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

type nobodyOnline struct{}

func (nobodyOnline) Online(string) bool { return false }

// newMembership returns the membership of a new device named name, in no
// pool.
func newMembership(t *testing.T, name string) *Membership {
	t.Helper()
	dir := t.TempDir()
	id, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	pm, err := pool.NewManager(context.Background(), pool.ManagerConfig{Identity: id, Name: func() string { return name }, DB: db,
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return New(id.ID, pm, nobodyOnline{}, nil)
}

// TestMembershipPeople: a pool created --as alice shows alice, owner, with
// this machine under her; add-device makes a code of one use for alice, as
// owner; the status's members carry their person; a person's name given
// with spaces around it is trimmed, one the pool refuses is a bad request;
// a merge of alice into herself is refused as a bad request, naming why.
func TestMembershipPeople(t *testing.T) {
	ctx := context.Background()
	bad := newMembership(t, "dgx")
	if _, err := bad.Create(ctx, app.CreateRequest{As: "al\x01ice"}); !errors.Is(err, app.ErrInvalid) {
		t.Errorf("create as a name with a control character: %v; want invalid", err)
	}
	p := newMembership(t, "dgx")
	if jc, err := p.Create(ctx, app.CreateRequest{As: " alice "}); err != nil || jc.Person != "alice" {
		t.Fatalf("create as alice: %+v, %v", jc, err)
	}
	ps, err := p.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.People) != 1 || ps.People[0].Name != "alice" || ps.People[0].Role != "owner" || !ps.People[0].Self || !ps.People[0].Active ||
		len(ps.People[0].Devices) != 1 || ps.People[0].Devices[0].Name != "dgx" || !ps.People[0].Devices[0].Self {
		t.Fatalf("people after create --as alice: %+v", ps.People)
	}
	if m := ps.Members[0]; m.PersonName != "alice" || m.PersonID != ps.People[0].ID {
		t.Errorf("member %+v does not name its person %s", m, ps.People[0].ID)
	}
	dc, err := p.AddDevice(ctx, app.AddDeviceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if dc.Person != "alice" || dc.Invite.Role != "owner" || dc.Invite.Uses != 1 || dc.Code == "" || dc.Invite.State != "active" {
		t.Errorf("add-device: %+v; want a code of one use for alice, owner", dc)
	}
	if _, err := pool.ParseCode(dc.Code); err != nil {
		t.Errorf("add-device code %q: %v", dc.Code, err)
	}
	if _, err := p.AddDevice(ctx, app.AddDeviceRequest{For: "bob"}); !errors.Is(err, app.ErrNotFound) {
		t.Errorf("add-device for nobody: %v; want not found", err)
	}
	err = p.Merge(ctx, app.MergeRequest{Who: "alice", Into: "dgx"})
	if !errors.Is(err, app.ErrInvalid) || !strings.Contains(err.Error(), `a device of "alice" (`) {
		t.Errorf("merge of alice into herself: %v; want a bad request saying she is one already", err)
	}
}

// TestMembershipDefaultName: with no --as, the person is the OS user's
// name, or the device's where there is none.
func TestMembershipDefaultName(t *testing.T) {
	p := newMembership(t, "dgx")
	if _, err := p.Create(context.Background(), app.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	ps, _ := p.Status(context.Background())
	want := app.OSUserName()
	if want == "" {
		want = "dgx"
	}
	if len(ps.People) != 1 || ps.People[0].Name != want {
		t.Errorf("people %+v; want one named %q", ps.People, want)
	}
	if strings.TrimSpace(ps.People[0].Name) != ps.People[0].Name {
		t.Errorf("name %q has spaces around it", ps.People[0].Name)
	}
}
