package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/lend"
	"github.com/labpool/labpool/sync/schema"
)

// TestPublishLend: the lend part publishes what its lender says as its lend
// record, and stops when its context ends.
func TestPublishLend(t *testing.T) {
	pol := lend.DefaultPolicy()
	pol.Mode = lend.Never
	d := &LendPart{l: lend.New(lend.DefaultConfig(), pol, nil, nil), self: "node", db: openDB(t), log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- d.publish(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, found, err := d.db.Latest(t.Context(), d.self, KindLend, "")
		if err != nil {
			t.Fatal(err)
		}
		if found {
			if !strings.Contains(string(rec.Data), `"mode":"never"`) || !strings.Contains(string(rec.Data), `"phase":"kept"`) {
				t.Errorf("lend record %s; want mode never, kept", rec.Data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no lend record within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("publish: %v", err)
	}
}

// TestLendSwitchKept: the "I'm using it" switch is kept in the local
// settings, so that an agent that restarts does not lend out a machine
// whose owner said they use it.
func TestLendSwitchKept(t *testing.T) {
	l := lend.New(lend.DefaultConfig(), lend.DefaultPolicy(), nil, nil)
	d := &LendPart{l: l, self: "node", db: openDB(t), log: slog.New(slog.DiscardHandler)}
	keptSwitch{d}.SetUsing(true)
	v, ok, err := d.db.Setting(t.Context(), schema.SettingLendUsing)
	if err != nil || !ok || v != "true" {
		t.Fatalf("setting after the switch on: %q, %v, %v; want \"true\"", v, ok, err)
	}
	if !l.State().Using {
		t.Error("the lender's switch is off")
	}
	keptSwitch{d}.SetUsing(false)
	if v, _, _ := d.db.Setting(t.Context(), schema.SettingLendUsing); v != "false" {
		t.Errorf("setting after the switch off: %q; want \"false\"", v)
	}
}
