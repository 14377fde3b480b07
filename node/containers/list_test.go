//go:build linux

package containers

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/containers/dockertest"
)

// TestListManyAndNodeScope creates 20 containers in mixed states on one
// node and a few of another node's: List returns exactly this node's.
func TestListManyAndNodeScope(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	r.cfg.Node = fmt.Sprintf("NODE-%d", time.Now().UnixNano())
	ocfg := r.cfg
	ocfg.Node += "-OTHER"
	other := newRuntime(ocfg, r.api)
	want := map[string]bool{}
	for i := range 20 {
		l := launch(fmt.Sprintf("lp-list-%d-%d", time.Now().UnixNano(), i), "sleep", "60")
		run := r.Create
		if i%2 == 0 {
			run = r.Run
		}
		c, err := run(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		cleanup(t, r, c.ID)
		want[c.ID] = i%2 == 0
	}
	for i := range 3 {
		c, err := other.Create(ctx, launch(fmt.Sprintf("lp-list-other-%d-%d", time.Now().UnixNano(), i), "true"))
		if err != nil {
			t.Fatal(err)
		}
		cleanup(t, other, c.ID)
	}
	start := time.Now()
	got, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("listed %d containers in %v", len(got), time.Since(start))
	if len(got) != len(want) {
		t.Errorf("List returned %d containers, want %d", len(got), len(want))
	}
	for _, c := range got {
		running, ok := want[c.ID]
		switch {
		case !ok:
			t.Errorf("List returned %s (%s), not this node's", c.Name, c.Labels[LabelNode])
		case c.Running != running || c.Labels[LabelNode] != r.cfg.Node:
			t.Errorf("container %s: running %v (want %v), node %q", c.Name, c.Running, running, c.Labels[LabelNode])
		}
	}
	out, err := exec.Command("docker", "-H", dockertest.Engine(t), "ps", "-aq", "--filter", "label="+LabelNode+"="+r.cfg.Node).Output()
	if n := len(strings.Fields(string(out))); err != nil || n != 20 {
		t.Errorf("docker ps sees %d containers of this node (%v), want 20", n, err)
	}
}
