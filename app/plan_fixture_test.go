package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/jobs"
)

// The UI's dev server (frontend/e2e/devjobs.mjs) answers the plan route
// by replaying plan()'s decisions recorded in devplans.json (TestDevPlans),
// filling in its machines' live readings and its jobs' names. Here it
// plans every recorded state of the dev pool with real jobs, for each
// request recorded, and the same with an image, a command and a time
// limit (fields the record's key leaves out), with and without a machine
// named: its JSON must be plan()'s. A request not recorded is answered as
// such, naming the record.
func TestPlanFixtureAgrees(t *testing.T) {
	nodeJS, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: the dev fixture's plan is not checked")
	}
	script, err := filepath.Abs(filepath.Join("..", "frontend", "e2e", "devjobs.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		t.Skipf("no dev fixture: %v", err)
	}
	live := func(node string, slot byte) (string, string, string, string) {
		return "job-" + node + "-" + string(slot), "train-" + node + "-" + string(slot), "OWNER" + string(slot), "member-" + string(slot)
	}
	type planCase struct {
		Nodes []Node    `json:"nodes"`
		Jobs  []Job     `json:"jobs"`
		Named string    `json:"named"`
		Spec  jobs.Spec `json:"spec"`
	}
	var cases []planCase
	var want []any
	for _, s := range devStates() {
		nodes, active := devPool(s, live)
		for _, spec := range devSpecs {
			limited := spec
			limited.Image, limited.Cmd, limited.TimeLimitSeconds = "labpool-test/busybox:1", []string{"sh"}, 7200
			for _, sp := range []jobs.Spec{spec, limited} {
				for _, named := range []int{-1, 0, 1, 2} {
					c := planCase{Nodes: nodes, Jobs: active, Spec: sp}
					var np *Node
					if named >= 0 {
						np, c.Named = &nodes[named], nodes[named].ID
					}
					cases = append(cases, c)
					want = append(want, roundJSON(t, plan(nodes, np, sp, active)))
				}
			}
		}
	}
	// Not recorded: a share.
	nodes, active := devPool(devStates()[0], live)
	cases = append(cases, planCase{Nodes: nodes, Jobs: active, Spec: jobs.Spec{GPUShare: 0.5}})

	in := mustJSON(t, cases)
	const prog = `
import { readFileSync } from 'node:fs'
const { planPool } = await import(process.argv[1])
const cases = JSON.parse(readFileSync(0, 'utf8'))
const out = cases.map((c) => planPool(c.nodes, c.named ? c.nodes.find((n) => n.id === c.named) : null, c.spec, c.jobs))
process.stdout.write(JSON.stringify(out))
`
	cmd := exec.Command(nodeJS, "--input-type=module", "-e", prog, "file://"+script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got []any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the fixture's plans: %v\n%.500s", err, out)
	}
	if len(got) != len(cases) {
		t.Fatalf("the fixture answered %d plans for %d cases", len(got), len(cases))
	}
	failed := 0
	for i := range want {
		if d := cmp.Diff(want[i], got[i]); d != "" && failed < 5 {
			failed++
			t.Errorf("named %q, spec %+v: the fixture plans otherwise (-Go +fixture):\n%s", cases[i].Named, cases[i].Spec, d)
		}
	}
	last, _ := got[len(got)-1].(map[string]any)
	if last["fits"] != false || !strings.Contains(fmt.Sprint(last["reason"]), `the dev server has no recorded plan of lab1:-- for {"gpu_share":0.5}`) {
		t.Errorf("a request not recorded: %v; want it said plainly", last)
	}
}

// roundJSON is v as JSON decodes it into any.
func roundJSON(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(mustJSON(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
