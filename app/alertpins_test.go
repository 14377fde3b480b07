package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alerts"
)

// TestAlertMutesAuthors: a machine's mutes in force are listed with the
// member who asked for each (a device no member is named by its short ID;
// a mute of an older labpool has none), ended ones left out, with its pins.
func TestAlertMutesAuthors(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, mikeID, "mike", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	svc := newService(t, db, Self{ID: selfID, Name: "zeta"}, nil, nil)
	svc.now = func() time.Time { return t0 }
	zero := 0
	const gone = "GONE-9999-9999-9999"
	st := AlertState{Rules: alerts.DefaultRules(), Pinned: []string{alerts.RuleGPUTemp}, Mutes: []AlertMute{
		{Node: alphaID, Rule: alerts.RuleIdleGranted, Until: t0.Add(time.Hour), By: mikeID},
		{Node: alphaID, Rule: alerts.RuleGPUTemp, GPU: &zero, Until: t0.Add(time.Hour), By: alphaID},
		{Node: alphaID, Rule: "gpu-throttle", Until: t0.Add(time.Hour), By: gone},
		{Node: alphaID, Rule: "gpu-health", Until: t0.Add(time.Hour)},
		{Node: alphaID, Rule: "gpu-ecc", Until: t0.Add(-time.Minute), By: mikeID}, // ended
	}}
	putRecord(t, db, alphaID, KindAlertRules, "", t0, mustJSON(t, st))

	got, err := svc.AlertMutes(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ rule, by, byName string }
	var rows []row
	for _, m := range got.Mutes {
		rows = append(rows, row{m.Rule, m.By, m.ByName})
	}
	want := []row{{alerts.RuleIdleGranted, mikeID, "mike"}, {alerts.RuleGPUTemp, alphaID, "alpha"}, {"gpu-throttle", gone, shortID(gone)}, {"gpu-health", "", ""}}
	if !slices.Equal(rows, want) || got.Node != alphaID || got.NodeName != "alpha" || !slices.Equal(got.Pinned, []string{alerts.RuleGPUTemp}) {
		t.Errorf("AlertMutes(alpha) = %+v (%+v); want %+v, pinned gpu-temp", got, rows, want)
	}
}

// TestPinAlertOnlyHere: the local API pins a rule on this machine through
// its agent (which sees its own user); a pin naming another machine is
// refused, naming the rule, and reaches no machine.
func TestPinAlertOnlyHere(t *testing.T) {
	var asked []string
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /v1/alerts/pins/{rule}", func(w http.ResponseWriter, r *http.Request) {
		var req alerts.PinRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		asked = append(asked, r.PathValue("rule"))
		pins := []string{}
		if req.Pinned {
			pins = append(pins, r.PathValue("rule"))
		}
		json.NewEncoder(w).Encode(pins)
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	stub := stubDaemon{NewReader(db, Self{ID: selfID})}
	svc, err := New(Deps{DB: db, Self: Self{ID: selfID, Name: "zeta"}, Live: fakeLive{}, Pool: stub, Nodes: nodeAt{srv},
		Folders: stub, Copier: stub, Policy: stub})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, node := range []string{"alpha", alphaID} {
		_, err := svc.PinAlert(ctx, PinRequest{Rule: alerts.RuleIdleGranted, Node: node, Pinned: true})
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), alerts.RulePinOwner) {
			t.Errorf("pin on %s: %v; want forbidden naming %q", node, err, alerts.RulePinOwner)
		}
	}
	if len(asked) != 0 {
		t.Fatalf("a refused pin reached a machine: %v", asked)
	}
	for _, node := range []string{"", "zeta"} {
		pins, err := svc.PinAlert(ctx, PinRequest{Rule: alerts.RuleIdleGranted, Node: node, Pinned: true})
		if err != nil || !slices.Equal(pins, []string{alerts.RuleIdleGranted}) {
			t.Errorf("pin here (node %q): %v, %v; want the rule pinned", node, pins, err)
		}
	}
	if pins, err := svc.PinAlert(ctx, PinRequest{Rule: alerts.RuleIdleGranted}); err != nil || len(pins) != 0 {
		t.Errorf("unpin: %v, %v; want no pin left", pins, err)
	}
	if _, err := svc.PinAlert(ctx, PinRequest{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("pin without a rule: %v; want invalid", err)
	}
}
