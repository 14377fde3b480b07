package alerting

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// sent records what a machine's webhook was given to post, as
// "name state alert-ID".
type sent []string

func (s *sent) send(name string, a alerts.Alert) {
	state := "firing"
	if !a.Active() {
		state = "cleared"
	}
	*s = append(*s, name+" "+state+" "+a.ID)
}

// relayPool is a pool of the members names (sorted by device ID, lowest
// first) with roles.
func relayPool(roles map[string]pool.Role) (fakePool, map[string]peer.ID) {
	ids := map[string]peer.ID{}
	p := fakePool{roles: map[peer.ID]pool.Role{}}
	for name, r := range roles {
		ids[name] = id(name)
		p.roles[ids[name]] = r
		p.members = append(p.members, pool.MemberState{ID: ids[name].String(), Name: name, Role: r})
	}
	return p, ids
}

// openHolder opens self's alerting holding the webhook URL, with its
// posts recorded and live sessions with the machines of live.
func openHolder(t *testing.T, db *store.DB, self peer.ID, p Pool, live online) (*Alerting, *sent) {
	t.Helper()
	in := NewInputs(self.String(), db, func() map[string]string { return nil }, nil, p, live)
	a := Open(context.Background(), Config{Self: self, Name: "self", Live: live}, db, p, in, discard)
	if err := a.Machine().SetWebhook(alerts.Caller{Local: true}, alerts.WebhookSetting{URL: "https://chat.example.org/lab"}); err != nil {
		t.Fatal(err)
	}
	s := &sent{}
	a.sendAs = s.send
	return a, s
}

// fire writes the alert record of origin's rule gpu-temp on GPU gpu (its
// ID), cleared when cleared, as origin's replica would bring it here.
func fire(t *testing.T, db *store.DB, origin peer.ID, gpu int, at time.Time, cleared bool) string {
	t.Helper()
	a := alerts.Alert{ID: fmt.Sprintf("gpu-temp.gpu%d.%d", gpu, at.UnixMilli()), Node: origin.String(), Rule: alerts.RuleGPUTemp,
		Severity: alerts.Warning, GPU: &gpu, Message: "hot", FiredAt: at}
	if cleared {
		end := at
		a.ClearedAt = &end
	}
	if err := NewStore(db, origin.String()).SaveAlert(a); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

// holding publishes origin's state: whether it holds the webhook.
func holding(t *testing.T, db *store.DB, origin peer.ID, holds bool) {
	t.Helper()
	if err := NewStore(db, origin.String()).Publish(alerts.State{Webhook: holds, WebhookAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestRelayIsTheLowestHolderOnline: the alerts of a machine without the
// URL are posted by the owner's or admin's machine holding it, online,
// with the lowest device ID, as each sees it: not by a member's machine
// that claims to hold it, nor counting one that is away or holds none.
func TestRelayIsTheLowestHolderOnline(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f"}
	slices.SortFunc(names, func(x, y string) int { return strings.Compare(id(x).String(), id(y).String()) })
	low, high := names[0], names[len(names)-1]
	tests := []struct {
		name     string
		self     pool.Role
		other    pool.Role // the machine of lower device ID than self's
		holds    bool      // the other publishes that it holds the URL
		online   bool      // and is online here
		selfURL  bool      // self holds the URL
		wantPost bool
	}{
		{"a lower admin holding it, online, relays", pool.RoleOwner, pool.RoleAdmin, true, true, true, false},
		{"the lower one away: this one", pool.RoleOwner, pool.RoleAdmin, true, false, true, true},
		{"the lower one holds none: this one", pool.RoleAdmin, pool.RoleOwner, false, true, true, true},
		{"a member's machine claiming it is no relay", pool.RoleOwner, pool.RoleMember, true, true, true, true},
		{"this one holds no URL: none here", pool.RoleOwner, pool.RoleViewer, false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ids := relayPool(map[string]pool.Role{high: tt.self, low: tt.other, "m": pool.RoleMember})
			db := replicatest.Open(t)
			holding(t, db, ids[low], tt.holds)
			holding(t, db, ids["m"], false)
			live := online{ids["m"].String(): true, ids[low].String(): tt.online}
			a, s := openHolder(t, db, ids[high], p, live)
			if !tt.selfURL {
				a.Machine().SetWebhook(alerts.Caller{Local: true}, alerts.WebhookSetting{})
			}
			a.look(context.Background()) // the baseline
			fired := fire(t, db, ids["m"], 0, time.Now(), false)
			a.look(context.Background())
			want := sent{}
			if tt.wantPost {
				want = sent{"m firing " + fired}
			}
			if !slices.Equal(*s, want) {
				t.Errorf("posted %q, want %q", *s, want)
			}
		})
	}
}

// TestRelayPostsEachOnce: the relay posts a firing and a clearing of a
// machine without the URL once each, under that machine's name; never
// what was there when it started (nor after a restart), an alert that
// machine wrote about another, a muted one, or the alerts of a machine
// that posts its own.
func TestRelayPostsEachOnce(t *testing.T) {
	p, ids := relayPool(map[string]pool.Role{"owner": pool.RoleOwner, "member": pool.RoleMember, "admin": pool.RoleAdmin})
	db := replicatest.Open(t)
	owner, member, admin := ids["owner"], ids["member"], ids["admin"]
	holding(t, db, member, false)
	holding(t, db, admin, true) // posts its own; away, so it relays nothing
	now := time.Now().UTC().Truncate(time.Millisecond)
	before := fire(t, db, member, 0, now.Add(-time.Hour), false)
	fire(t, db, member, 1, now.Add(-2*time.Hour), true)
	ctx := context.Background()

	a, s := openHolder(t, db, owner, p, online{member.String(): true})
	early := fire(t, db, member, 4, time.Now(), false) // after the URL was set, before the first look
	a.look(ctx)
	if want := (sent{"member firing " + early}); !slices.Equal(*s, want) {
		t.Fatalf("posted at start: %q; want %q, nothing of what was there before", *s, want)
	}
	*s = nil
	firedAt := time.Now().UTC().Truncate(time.Millisecond)
	fired := fire(t, db, member, 2, firedAt, false)
	fire(t, db, admin, 0, now, false)
	about := alerts.Alert{ID: "offline.x", Node: owner.String(), Rule: alerts.RuleOffline, Severity: alerts.Warning, Message: "owner is offline", FiredAt: now}
	if err := NewStore(db, member.String()).SaveAlert(about); err != nil {
		t.Fatal(err)
	}
	a.look(ctx)
	a.look(ctx)
	if want := (sent{"member firing " + fired}); !slices.Equal(*s, want) {
		t.Fatalf("after a firing: posted %q, want %q", *s, want)
	}
	fire(t, db, member, 2, firedAt, true)             // the same alert clears
	fire(t, db, member, 0, now.Add(-time.Hour), true) // cleared now
	a.look(ctx)
	a.look(ctx)
	want := sent{"member firing " + fired, "member cleared " + before, "member cleared " + fired} // in the order they fired
	if !slices.Equal(*s, want) {
		t.Fatalf("after clearings: posted %q, want %q", *s, want)
	}
	quick := fire(t, db, member, 3, time.Now(), true) // fired and cleared between two looks
	a.look(ctx)
	want = append(want, "member firing "+quick, "member cleared "+quick)
	if !slices.Equal(*s, want) {
		t.Fatalf("after a quick one: posted %q, want %q", *s, want)
	}

	// Muted on its machine: not posted, as its machine would not; once
	// unmuted while firing, posted.
	mutedAt := time.Now().UTC()
	gpu5 := 5
	muted := alerts.Alert{ID: "gpu-temp.gpu5.muted", Node: member.String(), Rule: alerts.RuleGPUTemp, Severity: alerts.Warning, GPU: &gpu5, Message: "hot", FiredAt: mutedAt, Muted: true}
	if err := NewStore(db, member.String()).SaveAlert(muted); err != nil {
		t.Fatal(err)
	}
	a.look(ctx)
	if !slices.Equal(*s, want) {
		t.Fatalf("after a muted firing: posted %q, want %q", *s, want)
	}
	muted.Muted = false
	if err := NewStore(db, member.String()).SaveAlert(muted); err != nil {
		t.Fatal(err)
	}
	a.look(ctx)
	a.look(ctx)
	want = append(want, "member firing "+muted.ID)
	if !slices.Equal(*s, want) {
		t.Fatalf("after unmuting: posted %q, want %q", *s, want)
	}

	// The admin's machine drops the URL: what it posted itself is not
	// posted again; what fires afterwards is relayed.
	holding(t, db, admin, false)
	a.look(ctx)
	if !slices.Equal(*s, want) {
		t.Fatalf("once the admin's machine dropped the URL: posted %q, want %q", *s, want)
	}
	adminFired := fire(t, db, admin, 1, time.Now(), false)
	a.look(ctx)
	want = append(want, "admin firing "+adminFired)
	if !slices.Equal(*s, want) {
		t.Fatalf("after the admin's machine's alert: posted %q, want %q", *s, want)
	}

	b, s2 := openHolder(t, db, owner, p, online{member.String(): true})
	b.look(ctx)
	b.look(ctx)
	if len(*s2) != 0 {
		t.Errorf("posted again after a restart: %q", *s2)
	}
}

// TestMemberMachineDropsTheURL: a member's machine that held the URL (from
// before, or it was demoted) drops it, and fetches none from an owner's
// machine; promoted, it fetches it again.
func TestMemberMachineDropsTheURL(t *testing.T) {
	self, owner := id("self"), id("owner")
	p := fakePool{roles: map[peer.ID]pool.Role{self: pool.RoleMember, owner: pool.RoleOwner},
		members: []pool.MemberState{{ID: self.String(), Role: pool.RoleMember}, {ID: owner.String(), Role: pool.RoleOwner}}}
	setAt := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	db, ownerDB := replicatest.Open(t), replicatest.Open(t)
	if err := NewStore(db, self.String()).SaveWebhook(alerts.WebhookSetting{URL: "https://chat.example.org/lab", At: setAt}); err != nil {
		t.Fatal(err)
	}
	ownerA := open(t, ownerDB, owner, p)
	if err := ownerA.Machine().SetWebhook(alerts.Caller{Local: true}, alerts.WebhookSetting{URL: "https://chat.example.org/lab", At: setAt}); err != nil {
		t.Fatal(err)
	}
	if err := NewStore(db, owner.String()).Publish(ownerA.Machine().State()); err != nil {
		t.Fatal(err)
	}
	nodes := &machines{self: self, p: p, handlers: map[peer.ID]*Alerting{owner: ownerA}}
	in := NewInputs(self.String(), db, func() map[string]string { return nil }, nil, p, nil)
	a := Open(context.Background(), Config{Self: self, Name: "self", Nodes: nodes}, db, p, in, discard)
	a.look(context.Background())
	if got := a.Machine().WebhookSetting(); got.URL != "" {
		t.Errorf("a member's machine holds %+v", got)
	}
	if v, _, _ := db.Setting(context.Background(), app.SettingAlertWebhook); v != "" {
		t.Errorf("its local setting holds %q", v)
	}
	if len(nodes.asked) != 0 {
		t.Errorf("a member's machine asked %v for the URL", nodes.asked)
	}

	p.roles[self] = pool.RoleAdmin // promoted
	a.look(context.Background())
	if got := a.Machine().WebhookSetting(); got.URL != "https://chat.example.org/lab" {
		t.Errorf("promoted to admin: holds %+v, want the owner's", got)
	}
}

// TestRelayPostsEachChangeOfSeverityOnce: an incident of a machine
// without the URL that rises to critical, then falls back to warning, is
// posted once per change, as its machine would post it, never again at
// the next look.
func TestRelayPostsEachChangeOfSeverityOnce(t *testing.T) {
	p, ids := relayPool(map[string]pool.Role{"owner": pool.RoleOwner, "member": pool.RoleMember})
	db := replicatest.Open(t)
	owner, member := ids["owner"], ids["member"]
	holding(t, db, member, false)
	a, s := openHolder(t, db, owner, p, online{member.String(): true})
	ctx := context.Background()
	a.look(ctx)
	var posted []alerts.Alert
	a.sendAs = func(name string, al alerts.Alert) { s.send(name, al); posted = append(posted, al) }
	zero := 0
	al := alerts.Alert{ID: "gpu-health.gpu0.1", Node: member.String(), Rule: alerts.RuleGPUHealth, Severity: alerts.Warning, GPU: &zero,
		Message: "GPU 0 health is warning", FiredAt: time.Now().UTC().Truncate(time.Millisecond)}
	save := func(sev, was string) {
		al.Severity, al.Was = sev, was
		if err := NewStore(db, member.String()).SaveAlert(al); err != nil {
			t.Fatal(err)
		}
		a.look(ctx)
		a.look(ctx)
	}
	save(alerts.Warning, "")
	save(alerts.Critical, alerts.Warning)
	save(alerts.Critical, "") // a later record of the incident: no change of severity
	save(alerts.Warning, alerts.Critical)
	want := sent{"member firing " + al.ID, "member firing " + al.ID, "member firing " + al.ID}
	if !slices.Equal(*s, want) {
		t.Fatalf("posted %q; want the firing, the rise and the fall, once each", *s)
	}
	var was []string
	for _, p := range posted {
		was = append(was, p.Severity+"/"+p.Was)
	}
	if w := []string{"warning/", "critical/warning", "warning/critical"}; !slices.Equal(was, w) {
		t.Errorf("posted severities %v; want %v", was, w)
	}
}
