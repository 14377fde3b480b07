package daemon

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/lend"
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
	code, err := node.members.Create(ctx, app.CreateRequest{})
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
