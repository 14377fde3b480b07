package cli

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/store"
)

// TestAlertsMutesAndPins: `alerts mutes MACHINE` lists each mute in force
// with who asked for it, and the machine's pins; `alerts pin` of another
// machine is refused naming the rule (only its own user pins its rules).
func TestAlertsMutesAndPins(t *testing.T) {
	dir := t.TempDir()
	db := writeReplica(t, dir)
	ctx := context.Background()
	now := time.Now().UTC()
	const mallory = "MALL-7777-7777-7777"
	for id, name := range map[string]string{selfID: "self", peerID: "peer", mallory: "mallory"} {
		if _, err := db.PutMember(ctx, store.MemberRow{ID: id, Name: name, Version: 1, AddedAt: now, AddedBy: selfID}); err != nil {
			t.Fatal(err)
		}
	}
	st := app.AlertState{Rules: alerts.DefaultRules(), Pinned: []string{alerts.RuleGPUTemp}, Mutes: []app.AlertMute{
		{Node: peerID, Rule: alerts.RuleIdleGranted, Until: now.Add(time.Hour), By: mallory},
		{Node: peerID, Rule: "gpu-health", Until: now.Add(time.Hour)},
	}}
	if _, err := db.Append(ctx, peerID, app.KindAlertRules, "", now, mustJSON(t, st)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, web.Handler(apptest.NewService(db, app.Self{ID: selfID, Name: "self"}, nil, nil), nil, slog.New(slog.DiscardHandler)))
	code, stdout, stderr := run(t, Hooks{}, "--data", dir, "alerts", "mutes", "peer")
	if code != ExitOK {
		t.Fatalf("alerts mutes: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"BY", alerts.RuleIdleGranted, "mallory", "gpu-health", "(not recorded)", "pinned on peer (muted by its owner only): " + alerts.RuleGPUTemp} {
		if !strings.Contains(stdout, want) {
			t.Errorf("alerts mutes lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = run(t, Hooks{}, "--data", dir, "alerts", "mutes", "peer", "--json")
	if code != ExitOK || !strings.Contains(stdout, `"by": "`+mallory+`"`) || !strings.Contains(stdout, `"by_name": "mallory"`) {
		t.Errorf("alerts mutes --json: exit %d:\n%s", code, stdout)
	}
	for _, verb := range []string{"pin", "unpin"} {
		code, _, stderr = run(t, Hooks{}, "--data", dir, "alerts", verb, alerts.RuleIdleGranted, "--node", "peer")
		if code == ExitOK || !strings.Contains(stderr, alerts.RulePinOwner) {
			t.Errorf("alerts %s --node peer: exit %d: %s; want refused naming %q", verb, code, stderr, alerts.RulePinOwner)
		}
	}
}
