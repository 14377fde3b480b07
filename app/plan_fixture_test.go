package app

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/jobs"
)

// The UI's dev fixture (frontend/e2e/devjobs.mjs) answers the plan route
// without a Service; its planPool must be this package's rule, not one of
// its own. Both plan the same cases here, and the JSON must be the same.
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
	nodes, active := planPool()
	nodes = append(nodes, Node{ID: "NOCT", Name: "noct", Online: true, ContainersError: "no Docker engine answers",
		GPUs: []GPU{{Index: 0, UUID: "NOCT-gpu0", MemTotalBytes: 80 * gib}}})
	nodes = append(nodes, Node{ID: "CPU", Name: "cpu", Online: true, Containers: true, Host: &HostStats{CPUPercent: 1}})
	nodes = append(nodes, nvlinkNode("NV", 91))
	cool := nvlinkNode("COOL", 0) // busier than NV, but no GPU throttling: 8 GPUs go here
	for i := range cool.GPUs {
		cool.GPUs[i].UtilPercent = 30
	}
	nodes = append(nodes, cool)
	nodes = append(nodes, Node{ID: "SPARK", Name: "spark", Online: true, Containers: true, GPUs: []GPU{{Index: 0, UUID: "SPARK-gpu0",
		Name: "NVIDIA GB10", MemTotalBytes: 119 * gib, MemUsedBytes: 100 * gib, MemUnified: true}}})
	type planCase struct {
		Named string    `json:"named"`
		Spec  jobs.Spec `json:"spec"`
	}
	var cases []planCase
	specs := []jobs.Spec{
		{}, {Image: "x"}, {GPUs: 1}, {GPUs: 1, MinGPUMemBytes: 40 * gib}, {GPUs: 2}, {GPUs: 2, Queue: true},
		{GPUs: 9}, {GPUIDs: []int{0}}, {GPUIDs: []int{1}}, {GPUIDs: []int{0, 1}, Queue: true}, {GPUIDs: []int{5}},
		{MinGPUMemBytes: 20 * gib},
	}
	specs = append(specs, jobs.Spec{GPUs: 3}, jobs.Spec{GPUs: 4}, jobs.Spec{GPUs: 5}, jobs.Spec{GPUs: 8})
	for _, named := range []string{"", "BIG", "SMALL", "OFF", "NOCT", "CPU", "NV", "SPARK"} {
		for _, s := range specs {
			cases = append(cases, planCase{Named: named, Spec: s})
		}
	}

	var want []any
	for _, c := range cases {
		var named *Node
		for i := range nodes {
			if nodes[i].ID == c.Named {
				named = &nodes[i]
			}
		}
		want = append(want, roundJSON(t, plan(nodes, named, c.Spec, active)))
	}

	in := mustJSON(t, map[string]any{"nodes": nodes, "jobs": active, "cases": cases})
	const prog = `
import { readFileSync } from 'node:fs'
const { planPool } = await import(process.argv[1])
const { nodes, jobs, cases } = JSON.parse(readFileSync(0, 'utf8'))
const out = cases.map((c) => planPool(nodes, c.named ? nodes.find((n) => n.id === c.named) : null, c.spec, jobs))
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
		t.Fatalf("the fixture's plans: %v\n%s", err, out)
	}
	if len(got) != len(want) {
		t.Fatalf("the fixture answered %d plans for %d cases", len(got), len(want))
	}
	for i := range cases {
		if d := cmp.Diff(want[i], got[i]); d != "" {
			t.Errorf("node %q, spec %+v: the fixture plans otherwise (-Go +fixture):\n%s", cases[i].Named, cases[i].Spec, d)
		}
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
