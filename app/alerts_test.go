package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/store"
)

// rolePool is a pool in which this machine holds role.
type rolePool struct {
	stubDaemon
	role string
}

func (p rolePool) Status(context.Context) (PoolStatus, error) {
	return PoolStatus{PoolID: "POOL", SelfID: selfID, SelfRole: p.role}, nil
}

func putAlert(t *testing.T, svc *Service, origin string, a Alert) {
	t.Helper()
	putRecord(t, svc.db, origin, KindAlert, a.ID, a.FiredAt, mustJSON(t, a))
}

func TestAlertsList(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	svc.now = func() time.Time { return t0 }
	zero := 0
	cleared := t0.Add(-47 * time.Hour)
	old := t0.Add(-9 * 24 * time.Hour)
	for _, a := range []struct {
		origin string
		a      Alert
	}{
		{selfID, Alert{ID: "hot-active", Node: selfID, Rule: alerts.RuleGPUTemp, GPU: &zero, FiredAt: t0.Add(-10 * 24 * time.Hour)}},
		{selfID, Alert{ID: "hot-2d", Node: selfID, Rule: alerts.RuleGPUTemp, GPU: &zero, FiredAt: t0.Add(-48 * time.Hour), ClearedAt: &cleared}},
		{selfID, Alert{ID: "hot-old", Node: selfID, Rule: alerts.RuleGPUTemp, GPU: &zero, FiredAt: old, ClearedAt: &old}},
		{alphaID, Alert{ID: "idle-alpha", Node: alphaID, Rule: alerts.RuleIdleGranted, GPU: &zero, FiredAt: t0.Add(-time.Hour)}},
		{alphaID, Alert{ID: "alpha-sees-self-offline", Node: selfID, Rule: alerts.RuleOffline, FiredAt: t0.Add(-time.Minute)}},
		{selfID, Alert{ID: "self-sees-alpha-offline", Node: alphaID, Rule: alerts.RuleOffline, FiredAt: t0.Add(-2 * time.Minute)}},
	} {
		putAlert(t, svc, a.origin, a.a)
	}
	ids := func(as []Alert) string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return strings.Join(out, " ")
	}
	got, err := svc.Alerts(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "self-sees-alpha-offline idle-alpha hot-2d hot-active"; ids(got) != want {
		t.Errorf("Alerts(week) = %s\nwant %s (newest first; active ones however old; offline as seen from here)", ids(got), want)
	}
	got, _ = svc.Alerts(context.Background(), 3600)
	if want := "self-sees-alpha-offline idle-alpha hot-active"; ids(got) != want {
		t.Errorf("Alerts(1 h) = %s, want %s", ids(got), want)
	}
	if _, err := svc.Alerts(context.Background(), -1); !errors.Is(err, ErrInvalid) {
		t.Errorf("Alerts(-1) = %v, want ErrInvalid", err)
	}
	if a, origin, err := svc.alertByID(context.Background(), "idle-alpha"); err != nil || origin != alphaID || a.Node != alphaID {
		t.Errorf("alertByID = %+v, %s, %v", a, origin, err)
	}
}

func TestAlertRulesAsPublished(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	rules, err := svc.AlertRules(context.Background(), "")
	if err != nil || len(rules) != len(alerts.DefaultRules()) || rules[0].ID != alerts.RuleGPUTemp {
		t.Fatalf("rules of a machine that published none = %+v, %v; want the defaults", rules, err)
	}
	custom := alerts.DefaultRules()
	custom[0].Threshold = 70
	putRecord(t, db, alphaID, KindAlertRules, "", t0, mustJSON(t, AlertState{Rules: custom}))
	rules, err = svc.AlertRules(context.Background(), "alpha")
	if err != nil || rules[0].Threshold != 70 {
		t.Fatalf("alpha's published rules = %+v, %v", rules, err)
	}
}

func TestAlertConfigNeedsOwnerOrAdmin(t *testing.T) {
	th := 90.0
	for _, role := range []string{"member", "viewer"} {
		db := openDB(t)
		svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, rolePool{role: role})
		_, err := svc.SetAlertRule(context.Background(), AlertRuleRequest{ID: alerts.RuleGPUTemp, AlertRuleUpdate: AlertRuleUpdate{Threshold: &th}})
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "alerts: owners and admins only") {
			t.Errorf("%s sets a rule: %v; want forbidden naming the rule", role, err)
		}
		_, err = svc.SetAlertWebhook(context.Background(), WebhookRequest{URL: "https://chat.example.org/hook"})
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "alerts: owners and admins only") {
			t.Errorf("%s sets the webhook: %v; want forbidden naming the rule", role, err)
		}
	}
	db := openDB(t)
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, rolePool{role: "admin"})
	for _, u := range []string{"file:/etc/passwd", "file:///etc/passwd", "ftp://x/y", "unix:/run/docker.sock"} {
		_, err := svc.SetAlertWebhook(context.Background(), WebhookRequest{URL: u})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "only http and https") {
			t.Errorf("admin sets webhook %q: %v; want invalid, http and https only", u, err)
		}
	}
	bad := "!="
	if _, err := svc.SetAlertRule(context.Background(), AlertRuleRequest{ID: alerts.RuleGPUTemp, AlertRuleUpdate: AlertRuleUpdate{Op: &bad}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a rule with op != : %v; want invalid", err)
	}
}

func TestAlertEvents(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- svc.RunAlertEvents(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunAlertEvents: %v", err)
		}
	}()
	events, stop := svc.Hub().Subscribe()
	defer stop()
	next := func(want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case ev := <-events:
				if ev.Name != EventAlerts {
					continue
				}
				as := ev.Data.([]Alert)
				got := ""
				if len(as) > 0 {
					got = as[0].ID
				}
				if got == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %s event with %q first", EventAlerts, want)
			}
		}
	}
	next("") // a UI that subscribes gets the list at once
	if _, err := db.Append(ctx, selfID, KindAlert, "a1", time.Now(), mustJSON(t, Alert{ID: "a1", Node: selfID, Rule: "gpu-temp", FiredAt: time.Now()})); err != nil {
		t.Fatal(err)
	}
	next("a1")
}

// TestRemovedMachineForgetsPoolAlerts: a machine removed from its pool
// lists its own alerts about itself and nothing of the old pool's: not
// the alerts alpha recorded (still active in its last records), not the
// machine-offline alerts it raised itself about alpha, fired or cleared.
// A member lists them all, as before.
func TestRemovedMachineForgetsPoolAlerts(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	svc.now = func() time.Time { return t0 }
	zero := 0
	cleared := t0.Add(-time.Minute)
	for _, a := range []struct {
		origin string
		a      Alert
	}{
		{selfID, Alert{ID: "hot-self", Node: selfID, Rule: alerts.RuleGPUTemp, GPU: &zero, FiredAt: t0.Add(-time.Hour)}},
		{alphaID, Alert{ID: "idle-alpha", Node: alphaID, Rule: alerts.RuleIdleGranted, GPU: &zero, FiredAt: t0.Add(-time.Hour)}},
		{selfID, Alert{ID: "alpha-offline", Node: alphaID, Rule: alerts.RuleOffline, FiredAt: t0.Add(-2 * time.Minute)}},
		{selfID, Alert{ID: "alpha-offline-before", Node: alphaID, Rule: alerts.RuleOffline, FiredAt: t0.Add(-3 * time.Hour), ClearedAt: &cleared}},
	} {
		putAlert(t, svc, a.origin, a.a)
	}
	list := func() string {
		got, err := svc.Alerts(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range got {
			out = append(out, a.ID)
		}
		return strings.Join(out, " ")
	}
	if got, want := list(), "alpha-offline hot-self idle-alpha alpha-offline-before"; got != want {
		t.Errorf("a member lists %s, want %s", got, want)
	}
	// pool remove zeta: its log's tombstone.
	if _, err := db.PutMember(context.Background(), store.MemberRow{ID: selfID, Name: "zeta", Version: 2, Removed: true, AddedAt: t0, AddedBy: alphaID}); err != nil {
		t.Fatal(err)
	}
	if got, want := list(), "hot-self"; got != want {
		t.Errorf("removed, it lists %s, want %s (its own alerts about itself only)", got, want)
	}
}
