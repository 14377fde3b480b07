//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReadmit: a removes the laptop; the laptop is told. Then a readmits
// it with `pool readmit laptop`, and nobody touches the laptop: within
// its next ask (a removed device asks once a minute) it is a member
// again, under its name and role, a is live on it again, and a lists it
// as a member. A viewer's readmission is refused naming the rule.
func TestReadmit(t *testing.T) {
	l := newLAN(t, "a", "laptop", "watcher")
	a, laptop, watcher := l.host("a"), l.host("laptop"), l.host("watcher")
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, a, laptop)
	code := lastLine(mustCLI(t, a, "pool", "invite", "--role", "viewer"))
	mustCLI(t, watcher, "pool", "join", code)
	waitFor(t, 20*time.Second, "a live on the laptop", func() error { return liveNodes(laptop, "a") })

	mustCLI(t, a, "pool", "remove", "laptop")
	waitFor(t, 20*time.Second, "the laptop told it was removed", func() error {
		out, errOut, code := laptop.cli("pool", "members")
		if code != 0 || !strings.Contains(out, "removed from the pool by a at ") {
			return fmt.Errorf("exit %d: %s%s", code, out, errOut)
		}
		return nil
	})
	waitFor(t, 20*time.Second, "the watcher to know the removal", func() error {
		out, _, _ := watcher.cli("pool", "members")
		if !strings.Contains(out, "removed") {
			return fmt.Errorf("members: %s", out)
		}
		return nil
	})
	if _, errOut, code := watcher.cli("pool", "readmit", "laptop"); code == 0 || !strings.Contains(errOut, "only admins and owners readmit") {
		t.Errorf("a viewer's readmission: exit %d, %q; want it refused naming the rule", code, errOut)
	}

	mustCLI(t, a, "pool", "readmit", "laptop")
	waitFor(t, 90*time.Second, "the laptop a member again", func() error {
		ps, err := laptop.client().Pool(context.Background())
		if err != nil {
			return err
		}
		if ps.Removed != nil || ps.SelfRole != "member" {
			return fmt.Errorf("removed %+v, role %q", ps.Removed, ps.SelfRole)
		}
		return nil
	})
	waitFor(t, 20*time.Second, "a live on the laptop again", func() error { return liveNodes(laptop, "a") })
	ps, err := a.client().Pool(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ps.Members {
		if m.Name == "laptop" && m.Removed {
			t.Errorf("a lists the laptop as removed after its readmission: %+v", m)
		}
	}
}
