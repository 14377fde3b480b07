package app

import (
	"context"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alerts"
)

// TestForgedAlertNotShown: an alert is a machine's only when that machine
// wrote it. One written by alpha "about" this machine or another, with
// alpha's text, reaches neither the list nor the notifications as theirs;
// an offline machine observed here is listed, marked as this machine's
// observation.
func TestForgedAlertNotShown(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, mikeID, "mike", false)
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	svc.now = func() time.Time { return t0 }
	for _, a := range []struct {
		origin string
		a      Alert
	}{
		{alphaID, Alert{ID: "forged-self", Node: selfID, Rule: alerts.RuleGPUTemp, Severity: alerts.Critical, Message: "attacker's text", FiredAt: t0}},
		{alphaID, Alert{ID: "forged-beta", Node: mikeID, Rule: alerts.RuleGPUTemp, Severity: alerts.Critical, Message: "attacker's text", FiredAt: t0}},
		{alphaID, Alert{ID: "alpha-own", Node: alphaID, Rule: alerts.RuleGPUTemp, Severity: alerts.Critical, Message: "GPU 0 at 95 °C", FiredAt: t0}},
		{selfID, Alert{ID: "beta-offline-seen-here", Node: mikeID, Rule: alerts.RuleOffline, Severity: alerts.Warning, FiredAt: t0}},
	} {
		putAlert(t, svc, a.origin, a.a)
	}
	got, err := svc.Alerts(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Alert{}
	for _, a := range got {
		byID[a.ID] = a
	}
	if _, ok := byID["forged-self"]; ok {
		t.Errorf("alpha's alert about this machine is listed: %+v", got)
	}
	if _, ok := byID["forged-beta"]; ok {
		t.Errorf("alpha's alert about mike is listed: %+v", got)
	}
	if a, ok := byID["alpha-own"]; !ok || a.Node != alphaID || a.Observer != "" {
		t.Errorf("alpha's own alert: %+v, %v; want listed as alpha's", a, ok)
	}
	off, ok := byID["beta-offline-seen-here"]
	if !ok || off.Node != mikeID || off.Observer != selfID {
		t.Errorf("beta offline, observed here: %+v, %v; want listed with this machine as its observer", off, ok)
	}
	n := notification(off, map[string]string{selfID: "zeta", mikeID: "mike"})
	if n.Summary != "machine-offline on mike (seen from zeta)" {
		t.Errorf("notification %q; want it to say whose observation it is", n.Summary)
	}
}
