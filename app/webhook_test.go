package app

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/store"
)

// memberID is the device ID of the member called name, in these tests.
func memberID(name string) string { return strings.ToUpper(name) + "-AAAA-AAAA-AAAA" }

// TestAlertWebhookByRole: the webhook's URL, a secret of the lab's chat, is
// answered to an owner's or admin's device (and outside a pool); a member's
// or viewer's device hears only that one is set.
func TestAlertWebhookByRole(t *testing.T) {
	const hook = "https://chat.example.org/hooks/secret-token"
	tests := []struct {
		role    string
		wantURL string
	}{
		{"owner", hook},
		{"admin", hook},
		{"member", ""},
		{"viewer", ""},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			db := openDB(t)
			if err := db.SetSetting(context.Background(), SettingAlertWebhook, hook); err != nil {
				t.Fatal(err)
			}
			svc := newService(t, db, Self{ID: selfID}, nil, rolePool{role: tt.role})
			got, err := svc.AlertWebhook(context.Background())
			if err != nil || got.URL != tt.wantURL || !got.Set {
				t.Errorf("AlertWebhook as %s = %+v, %v; want URL %q, set", tt.role, got, err, tt.wantURL)
			}
		})
	}
	db := openDB(t)
	svc := newService(t, db, Self{ID: selfID}, nil, rolePool{role: "viewer"})
	if got, err := svc.AlertWebhook(context.Background()); err != nil || got.Set || got.URL != "" {
		t.Errorf("AlertWebhook with none set = %+v, %v", got, err)
	}
}

// nodeRecorder answers every peer call with 204 and records which
// machines were called.
type nodeRecorder struct {
	stubDaemon
	mu     sync.Mutex
	called []string
}

func (n *nodeRecorder) NodeClient(_ context.Context, node string) (*http.Client, error) {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		n.mu.Lock()
		n.called = append(n.called, node)
		n.mu.Unlock()
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	})}, nil
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSetAlertWebhookOwnersAndAdminsMachinesOnly: the URL is sent to the
// machines of owners and admins alone; a member's or viewer's machine
// never receives it (an owner's or admin's machine relays its alerts); a
// removal, which carries none, goes to every machine.
func TestSetAlertWebhookOwnersAndAdminsMachinesOnly(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	if err := db.SetSetting(ctx, SettingPoolID, "pool-1"); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{"owner": selfID, "admin": memberID("admin"), "member": memberID("member"), "viewer": memberID("viewer"), "gone": memberID("gone")}
	for role, id := range ids {
		m := store.MemberRow{ID: id, Name: role, Version: 1, AddedAt: t0, AddedBy: selfID, Role: role, Removed: role == "gone"}
		if role == "gone" {
			m.Role = "admin"
		}
		if _, err := db.PutMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	nodes := &nodeRecorder{stubDaemon: stubDaemon{NewReader(db, Self{ID: selfID})}}
	svc, err := New(Deps{DB: db, Self: Self{ID: selfID, Name: "owner"}, Live: fakeLive{}, Pool: nodes.stubDaemon, Nodes: nodes,
		Folders: nodes.stubDaemon, Copier: nodes.stubDaemon, Policy: nodes.stubDaemon})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := svc.SetAlertWebhook(ctx, WebhookRequest{URL: "https://chat.example.org/hook"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(nodes.called)
	want := []string{ids["owner"], ids["admin"]}
	slices.Sort(want)
	if !slices.Equal(nodes.called, want) || !slices.Equal(applied.Applied, []string{"admin", "owner"}) {
		t.Errorf("the URL went to %v (applied %v); want the owner's and the admin's machines only", nodes.called, applied.Applied)
	}
	nodes.called = nil
	if _, err := svc.SetAlertWebhook(ctx, WebhookRequest{}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.called) != 4 {
		t.Errorf("the removal went to %v; want every current member's machine", nodes.called)
	}
}

// TestAlertWebhookSetOnOwnersMachines: a member's machine, which holds no
// URL, hears that one is set when an owner's or admin's machine publishes
// that it holds one (a member's claim is not enough).
func TestAlertWebhookSetOnOwnersMachines(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	if err := db.SetSetting(ctx, SettingPoolID, "pool-1"); err != nil {
		t.Fatal(err)
	}
	owner, other := memberID("owner"), memberID("other")
	for _, m := range []store.MemberRow{{ID: selfID, Role: "member"}, {ID: owner, Role: "owner"}, {ID: other, Role: "member"}} {
		m.Version, m.AddedAt, m.AddedBy = 1, t0, owner
		if _, err := db.PutMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	svc := newService(t, db, Self{ID: selfID}, nil, nil)
	putRecord(t, db, other, KindAlertRules, "", t0, mustJSON(t, AlertState{Rules: alerts.DefaultRules(), Webhook: true}))
	if got, err := svc.AlertWebhook(ctx); err != nil || got.Set || got.URL != "" {
		t.Errorf("with a member's claim alone: %+v, %v; want none set", got, err)
	}
	putRecord(t, db, owner, KindAlertRules, "", t0, mustJSON(t, AlertState{Rules: alerts.DefaultRules(), Webhook: true}))
	if got, err := svc.AlertWebhook(ctx); err != nil || !got.Set || got.URL != "" {
		t.Errorf("with the owner's machine holding one: %+v, %v; want set, no URL", got, err)
	}
}
