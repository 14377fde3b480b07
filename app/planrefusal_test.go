package app

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labpool/labpool/node/jobs"
)

// dockerError is what a laptop's node record says when it has no engine.
const dockerError = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running? " +
	"(error during connect: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.47/version\": dial unix /var/run/docker.sock: connect: no such file or directory)"

// laptop is an online machine of the pool with no GPU and no Docker engine.
func laptop(name string) Node {
	return Node{ID: strings.ToUpper(name), Name: name, Online: true, ContainersError: dockerError}
}

// TestNoFitReasonShape: the refusal when no machine fits is a headline and
// a line per machine, each bounded, whatever the pool; machines that
// cannot run containers share one line, last, without their engines'
// errors.
func TestNoFitReasonShape(t *testing.T) {
	base, active := planPool()
	many := []Node{laptop("ana-laptop")}
	for i := range 30 {
		n := base[1]
		n.ID, n.Name = fmt.Sprintf("WS%d", i), fmt.Sprintf("ws-%02d", i)
		for k := range n.GPUs {
			n.GPUs[k].Node = n.ID
		}
		many = append(many, n)
	}
	brokenEngine := base[0] // a GPU machine whose Docker fails
	brokenEngine.Containers, brokenEngine.ContainersError = false, dockerError
	hostile := base[1]
	hostile.Name = "evil\nforged line" + strings.Repeat("x", 400)
	for _, tc := range []struct {
		name      string
		nodes     []Node
		lines     int      // how many lines, at most
		want      []string // in this order
		last      string   // the last line holds it ("" for no check)
		withoutIt []string
	}{
		{name: "two laptops first", nodes: append([]Node{laptop("ana-laptop"), laptop("bob-laptop")}, base...), lines: 4,
			want: []string{"no machine fits:", "\n  big: 1 of 2 GPUs free that match", "\n  small: 1 of 2 GPUs free", "\n  cannot run containers"},
			last: "cannot run containers (labpool nodes says why): ana-laptop, bob-laptop", withoutIt: []string{"docker.sock", "off"}},
		{name: "thirty machines", nodes: many, lines: 1 + refusalMachines + 2,
			want: []string{"no machine fits:", "\n  ws-00: ", "\n  and 18 more machines", "\n  cannot run containers"}, last: "ana-laptop"},
		{name: "a name with a newline", nodes: []Node{hostile, laptop("ana-laptop")}, lines: 3,
			want: []string{"no machine fits:", "\n  evil forged linexxx", "…\n  cannot run containers"}},
		{name: "a GPU machine's engine fails", nodes: []Node{laptop("ana-laptop"), brokenEngine, base[1]}, lines: 4,
			want: []string{"no machine fits:", "\n  big: cannot run containers: Cannot connect to the Docker daemon", "\n  small: ", "\n  cannot run containers (labpool nodes says why): ana-laptop"}},
		{name: "only laptops", nodes: []Node{laptop("ana-laptop"), laptop("bob-laptop")}, lines: 2,
			want: []string{"no machine fits:\n  cannot run containers (labpool nodes says why): ana-laptop, bob-laptop"}},
		{name: "nobody online", nodes: base[2:], lines: 1, want: []string{"no machine fits: none is online"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(tc.nodes, nil, jobs.Spec{GPUs: 2}, active)
			if p.Fits || p.Node != "" {
				t.Fatalf("plan fits on %q; want no machine", p.NodeName)
			}
			lines := strings.Split(p.Reason, "\n")
			if len(lines) > tc.lines {
				t.Errorf("%d lines, want at most %d:\n%s", len(lines), tc.lines, p.Reason)
			}
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > refusalWidth+2 {
					t.Errorf("a line of %d characters: %q", n, l)
				}
			}
			rest := p.Reason
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("reason lacks %q after what came before:\n%s", w, p.Reason)
				}
				rest = rest[i+len(w):]
			}
			if tc.last != "" && !strings.Contains(lines[len(lines)-1], tc.last) {
				t.Errorf("last line %q; want it to hold %q", lines[len(lines)-1], tc.last)
			}
			for _, w := range tc.withoutIt {
				if strings.Contains(p.Reason, w) {
					t.Errorf("reason holds %q:\n%s", w, p.Reason)
				}
			}
		})
	}
}
