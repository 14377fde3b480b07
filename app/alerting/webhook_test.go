package alerting

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
)

// machines is a NodeCaller reaching each machine's alerts.Handler in
// process, as the peer API would; the handler sees the caller as the
// machine asking (self).
type machines struct {
	self     peer.ID
	p        Pool
	handlers map[peer.ID]*Alerting
	asked    []peer.ID
}

func (m *machines) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	pid, err := peer.ParseID(node)
	if err != nil {
		return nil, err
	}
	m.asked = append(m.asked, pid)
	a, ok := m.handlers[pid]
	if !ok {
		return nil, fmt.Errorf("no address known for %s", pid.Short())
	}
	role, _ := m.p.Role(m.self)
	h := alerts.Handler(a.Machine(), func(*http.Request) alerts.Caller { return alerts.Caller{ID: m.self.String(), Role: string(role)} })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, r.Method, r.Path, r.Body))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d: %s", pid.Short(), rec.Code, rec.Body)
	}
	return io.NopCloser(rec.Body), nil
}

// TestWebhookFetchedFromOwnersMachine: an admin's machine that was away
// when an owner set the webhook fetches it from the owner's machine once
// it sees that machine's newer state; a member's machine (claiming a newer
// one) is never asked, and a machine holding a newer webhook keeps it.
func TestWebhookFetchedFromOwnersMachine(t *testing.T) {
	self, owner, admin, member := id("self"), id("owner"), id("admin"), id("member")
	p := fakePool{roles: map[peer.ID]pool.Role{self: pool.RoleAdmin, owner: pool.RoleOwner, admin: pool.RoleAdmin, member: pool.RoleMember}}
	setAt := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)

	ownerDB, memberDB, db := replicatest.Open(t), replicatest.Open(t), replicatest.Open(t)
	ownerA, memberA := open(t, ownerDB, owner, p), open(t, memberDB, member, p)
	if err := ownerA.Machine().SetWebhook(alerts.Caller{Local: true}, alerts.WebhookSetting{URL: "https://chat.example.org/lab", At: setAt}); err != nil {
		t.Fatal(err)
	}
	// Their published states arrive in this machine's replica; the
	// member's machine claims a newer webhook.
	for origin, st := range map[peer.ID]alerts.State{owner: ownerA.Machine().State(), member: {Webhook: true, WebhookAt: setAt.Add(time.Second)}} {
		if err := NewStore(db, origin.String()).Publish(st); err != nil {
			t.Fatal(err)
		}
	}

	nodes := &machines{self: self, p: p, handlers: map[peer.ID]*Alerting{owner: ownerA, member: memberA}}
	in := NewInputs(self.String(), db, func() map[string]string { return nil }, nil, p, nil)
	a := Open(context.Background(), Config{Self: self, Name: "self", Nodes: nodes}, db, p, in, discard)
	a.adoptNewest(context.Background())
	if got := a.Machine().WebhookSetting(); got.URL != "https://chat.example.org/lab" || !got.At.Equal(setAt) {
		t.Fatalf("after seeing the owner's state: webhook %+v, want the owner's", got)
	}
	for _, asked := range nodes.asked {
		if asked != owner {
			t.Errorf("asked %s for the webhook; only the owner's machine should be", asked.Short())
		}
	}
	// Kept across a restart, and not fetched again.
	nodes.asked = nil
	b := Open(context.Background(), Config{Self: self, Name: "self", Nodes: nodes}, db, p, in, discard)
	if got := b.Machine().WebhookSetting(); got.URL != "https://chat.example.org/lab" {
		t.Errorf("after a restart: webhook %+v", got)
	}
	b.adoptNewest(context.Background())
	if len(nodes.asked) != 0 {
		t.Errorf("fetched again though it holds the newest: asked %v", nodes.asked)
	}

	// The owner's machine is away: nothing changes, nothing breaks.
	removed := time.Now().UTC()
	if err := NewStore(db, owner.String()).Publish(alerts.State{WebhookAt: removed}); err != nil {
		t.Fatal(err)
	}
	delete(nodes.handlers, owner)
	b.adoptNewest(context.Background())
	if got := b.Machine().WebhookSetting(); got.URL != "https://chat.example.org/lab" {
		t.Errorf("with the owner away: webhook %+v", got)
	}

	// Set again on every machine at once, while this one was away: the
	// owner's machine is away too, the admin's answers.
	again := time.Now().UTC().Truncate(time.Millisecond)
	adminA := open(t, replicatest.Open(t), admin, p)
	if err := adminA.Machine().SetWebhook(alerts.Caller{Local: true}, alerts.WebhookSetting{URL: "https://chat.example.org/lab2", At: again}); err != nil {
		t.Fatal(err)
	}
	for origin, st := range map[peer.ID]alerts.State{owner: {WebhookAt: again}, admin: adminA.Machine().State()} {
		if err := NewStore(db, origin.String()).Publish(st); err != nil {
			t.Fatal(err)
		}
	}
	nodes.handlers = map[peer.ID]*Alerting{admin: adminA, member: memberA}
	b.adoptNewest(context.Background())
	if got := b.Machine().WebhookSetting(); got.URL != "https://chat.example.org/lab2" || !got.At.Equal(again) {
		t.Errorf("with the owner away and the admin's machine there: webhook %+v, want the admin's", got)
	}
}
