package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/lend"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// TestLendIsTheMachinesOwn is the attack: an owner of the pool (who may
// do the most there) asks a machine, over the pool's transport, to set
// its lend policy or flip its "I'm using it" switch, on every path such a
// call could take. Neither changes: both are the machine's own user's,
// through its local socket alone.
func TestLendIsTheMachinesOwn(t *testing.T) {
	ctx := t.Context()
	node := openServing(t, "node")
	addr := node.ep.Addr().String()
	code, err := node.members.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner := openDaemon(t, "owner")
	if _, err := owner.members.Join(ctx, app.JoinRequest{Code: code.Code, Addr: addr}); err != nil {
		t.Fatal(err)
	}
	if err := node.members.SetRole(ctx, owner.id.ID.String(), "owner"); err != nil {
		t.Fatal(err)
	}
	before, err := node.svc.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := lend.New(lend.DefaultConfig(), before.Lend, nil, nil)
	node.svc.SetLending(l)

	client := owner.ep.Client(node.id.ID, []string{addr})
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "/api/v1/policy", `{"lend":"never","grace_seconds":1}`},
		{"PUT", "/v1/policy", `{"lend":"never"}`},
		{"PUT", "/v1/node/policy", `{"lend":"never"}`},
		{"PUT", "/api/v1/lend/using", `{"using":true}`},
		{"PUT", "/v1/lend/using", `{"using":true}`},
		{"POST", "/v1/lend", `{"using":true}`},
	} {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(rctx, call.method, "https://peer"+call.path, strings.NewReader(call.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("%s %s: %v", call.method, call.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("%s %s by the pool's owner: %s; want it refused", call.method, call.path, resp.Status)
		}
	}
	if after, err := node.svc.Policy(ctx); err != nil || after.Lend != before.Lend {
		t.Errorf("the pool's owner changed the machine's lend policy: %+v -> %+v", before.Lend, after.Lend)
	}
	if l.State().Using {
		t.Error("the pool's owner turned the machine's \"I'm using it\" switch on")
	}
	// The machine's own user, through the local API, does.
	if st, err := node.svc.SetLendUsing(ctx, app.LendUsing{Using: true}); err != nil || !st.Using {
		t.Errorf("the machine's own user turns the switch on: %+v, %v", st, err)
	}
	u := app.PolicyUpdate{Lend: ptrTo(lend.Idle)}
	if p, err := node.svc.SetPolicy(ctx, u); err != nil || p.Lend.Mode != lend.Idle {
		t.Errorf("the machine's own user sets lend idle: %+v, %v", p.Lend, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestPublishLend: the daemon publishes what its lender says as its lend
// record, and stops when its context ends.
func TestPublishLend(t *testing.T) {
	pol := lend.DefaultPolicy()
	pol.Mode = lend.Never
	d := &lendPart{l: lend.New(lend.DefaultConfig(), pol, nil, nil), self: "node", db: testStore(t), log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- d.publish(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, found, err := d.db.Latest(t.Context(), d.self, app.KindLend, "")
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
	d := &lendPart{l: l, self: "node", db: testStore(t), log: slog.New(slog.DiscardHandler)}
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

// testStore is a replica store of the test's own.
func testStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
