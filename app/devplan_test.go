package app

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/jobs"
)

// The UI's dev server (frontend/e2e/devserver.mjs, devjobs.mjs) answers
// the plan route without a Service. It holds no plan rule of its own: it
// replays the decisions this file records from plan(), in
// frontend/e2e/devplans.json, for the dev pool's machines in every state
// its scenarios reach (which GPUs its jobs hold, whether lab3 is online,
// which machine is least loaded) and the requests the Launch dialog and
// the e2e scripts send. A request or a state not recorded is answered
// plainly as such, never guessed.
//
// go test ./app -run TestDevPlans -update rewrites the file.

var updateDevPlans = flag.Bool("update", false, "rewrite frontend/e2e/devplans.json")

const devPlansFile = "../frontend/e2e/devplans.json"

// devPlanFields are the fields of a spec that make the key of a recorded
// decision, in this order (devjobs.mjs's PLAN_FIELDS). The others (image,
// command, ports, mounts, memory...) do not move a GPU plan; nor does a
// time limit on a pool that holds no reservation, as the dev pool
// (TestPlanFixtureAgrees plans with both and wants one answer).
var devPlanFields = []string{"gpus", "gpu_ids", "mig_ids", "mig_profile", "gpu_share", "gpu_mem_bytes", "min_gpu_mem_bytes",
	"partition", "nodes", "gpus_per_node", "queue"}

// devSpecs are the requests recorded: the dialog's GPU counts, indexes and
// memory, with and without the queue.
var devSpecs = []jobs.Spec{
	{}, {GPUs: 1}, {GPUs: 2}, {GPUs: 3}, {GPUs: 1, Queue: true}, {GPUs: 2, Queue: true}, {GPUs: 3, Queue: true},
	{GPUIDs: []int{0}}, {GPUIDs: []int{1}}, {GPUIDs: []int{0, 1}}, {GPUIDs: []int{0}, Queue: true}, {GPUIDs: []int{1}, Queue: true},
	{GPUs: 1, MinGPUMemBytes: 40 * gib}, {GPUs: 1, MinGPUMemBytes: 40 * gib, Queue: true},
}

// devState is one state of the dev pool: the holders of lab1's two GPUs
// and lab3's one (a letter per GPU, the same letter for one job, '-' for
// none), whether lab3 is online, and the online machines least loaded
// first.
type devState struct {
	lab1, lab3 string
	lab3Online bool
	load       []string
}

func devStates() []devState {
	var out []devState
	for _, on := range []bool{true, false} {
		names := []string{"lab1", "lab2"}
		if on {
			names = append(names, "lab3")
		}
		for _, l1 := range []string{"--", "a-", "-a", "ab", "aa"} {
			for _, l3 := range []string{"-", "a"} {
				for _, order := range permutations(names) {
					out = append(out, devState{lab1: l1, lab3: l3, lab3Online: on, load: order})
				}
			}
		}
	}
	return out
}

func permutations(s []string) [][]string {
	if len(s) <= 1 {
		return [][]string{slices.Clone(s)}
	}
	var out [][]string
	for i := range s {
		rest := slices.Concat(s[:i], s[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]string{s[i]}, p...))
		}
	}
	return out
}

// devNames names the job holding a slot: jobName("lab1", 'a') is the
// token the record keeps ("<<job:lab1:a>>"), or, real, a name as the dev
// server's jobs have.
type devNames func(node string, slot byte) (id, name, owner, ownerName string)

func devTokens(node string, slot byte) (string, string, string, string) {
	s := node + ":" + string(slot)
	return "<<id:" + s + ">>", "<<job:" + s + ">>", "<<oid:" + s + ">>", "<<owner:" + s + ">>"
}

// devPool is the dev server's machines (frontend/e2e/devserver.mjs) in
// state s, and the jobs holding their GPUs.
func devPool(s devState, names devNames) ([]Node, []Job) {
	util := func(name string) float64 { return float64(10 + 20*slices.Index(s.load, name)) }
	mk := func(id, name string, online bool, model string, memGiB uint64, held string) (Node, []Job) {
		n := Node{ID: id, Name: name, Online: online, Containers: true, GPUs: []GPU{}, Host: &HostStats{CPUPercent: util(name)}}
		byslot := map[byte]*Job{}
		var js []Job
		for i := range len(held) {
			g := GPU{Node: id, Index: i, UUID: fmt.Sprintf("GPU-%s-%d", id[:8], i), Name: model, MemTotalBytes: memGiB * gib,
				MemUsedBytes: memGiB * gib / 2, UtilPercent: util(name), TempC: 50}
			if slot := held[i]; slot != '-' {
				g.Processes = 1
				j := byslot[slot]
				if j == nil {
					jid, jname, owner, ownerName := names(name, slot)
					j = &Job{Job: jobs.Job{ID: jid, Name: jname, Node: id, Owner: owner, State: jobs.Running, Spec: jobs.Spec{Image: "x"}},
						NodeName: name, OwnerName: ownerName}
					byslot[slot] = j
				}
				j.GPUs = append(j.GPUs, g.UUID)
			}
			n.GPUs = append(n.GPUs, g)
		}
		for _, slot := range []byte("ab") {
			if j := byslot[slot]; j != nil {
				js = append(js, *j)
			}
		}
		return n, js
	}
	lab1, j1 := mk("K7Q2MX4PAB3CDEF5GHIJ6KLMN7OPQR2STUV3WXYZ4ABCDE5FGHI", "lab1", true, "NVIDIA A100-SXM4-80GB", 80, s.lab1)
	lab2, _ := mk("B9TXW2LM5QRSTUV6WXYZ7ABCD2EFGH3IJKL4MNOP5QRST6UVWX", "lab2", true, "", 0, "")
	lab3, j3 := mk("R4NDQ8ZPC2DEFG3HIJK4LMNO5PQRS6TUVW7XYZA2BCDE3FGHIJ", "lab3", s.lab3Online, "NVIDIA GeForce RTX 4090", 24, s.lab3)
	return []Node{lab1, lab2, lab3}, slices.Concat(j1, j3)
}

// devNodeKey is the key of a machine's recorded plan: its name, "(off)"
// when offline, and its GPUs' holders (devjobs.mjs nodeKey): "lab1:a-".
func devNodeKey(n Node, held string) string {
	off := ""
	if !n.Online {
		off = "(off)"
	}
	return n.Name + off + ":" + held
}

// devPoolKey is the key of a recorded pick among the machines.
func devPoolKey(s devState) string {
	nodes, _ := devPool(s, devTokens)
	return strings.Join([]string{devNodeKey(nodes[0], s.lab1), devNodeKey(nodes[1], ""), devNodeKey(nodes[2], s.lab3),
		"load:" + strings.Join(s.load, ",")}, " ")
}

// devSpecKey is the key of a request: devPlanFields set in spec, in
// order, as JSON.
func devSpecKey(t testing.TB, spec jobs.Spec) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(mustJSON(t, spec), &m); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, f := range devPlanFields {
		if v, ok := m[f]; ok {
			parts = append(parts, fmt.Sprintf("%q:%s", f, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// devGPU is a GPU's row of a recorded plan: what plan() decided (its
// state, its line, why it is kept out, the slot of the job holding it);
// the dev server adds the live reading (name, memory, use) and the
// holding job's ID and names.
type devGPU struct {
	Index  int    `json:"index"`
	State  string `json:"state"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Slot   string `json:"slot,omitempty"`
}

// devNodePlan is a machine's recorded plan (NodePlan less what the dev
// server fills in).
type devNodePlan struct {
	Fits      bool     `json:"fits"`
	Reason    string   `json:"reason"`
	Free      int      `json:"free"`
	Picked    []int    `json:"picked,omitempty"`
	Placement string   `json:"placement,omitempty"`
	GPUs      []devGPU `json:"gpus"`
}

// devPick is the machine a request with none named goes to ("": none
// fits), and why.
type devPick struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// devPlans is the record: machine plans by machine key and request key
// ("lab1:a- {\"gpus\":1}"); picks by pool key and request key
// ("lab1:a- lab2: lab3(off):- load:lab2,lab1 {\"gpus\":1}").
type devPlans struct {
	Note  string                 `json:"note"`
	Nodes map[string]devNodePlan `json:"nodes"`
	Picks map[string]devPick     `json:"picks"`
}

func recordDevPlans(t *testing.T) devPlans {
	out := devPlans{Note: "recorded by app/devplan_test.go (go test ./app -run TestDevPlans -update): the dev server replays these",
		Nodes: map[string]devNodePlan{}, Picks: map[string]devPick{}}
	for _, s := range devStates() {
		nodes, active := devPool(s, devTokens)
		held := []string{s.lab1, "", s.lab3}
		for _, spec := range devSpecs {
			sk := devSpecKey(t, spec)
			p := plan(nodes, nil, spec, active)
			for i, np := range p.Nodes {
				rec := devNodePlanOf(np, held[i])
				k := devNodeKey(nodes[i], held[i]) + " " + sk
				if old, ok := out.Nodes[k]; ok && !cmp.Equal(old, rec) {
					t.Fatalf("%s: a machine's plan depends on more than its own state:\n%s", k, cmp.Diff(old, rec))
				}
				out.Nodes[k] = rec
				// Named, the plan is that machine's own (what the dev server replays).
				if named := plan(nodes, &nodes[i], spec, active); !cmp.Equal(named.NodePlan, np) {
					t.Fatalf("%s named, %s: the plan is not the machine's own:\n%s", nodes[i].Name, sk, cmp.Diff(np, named.NodePlan))
				}
			}
			out.Picks[devPoolKey(s)+" "+sk] = devPick{Node: p.NodeName, Reason: p.Reason}
		}
	}
	return out
}

func devNodePlanOf(np NodePlan, held string) devNodePlan {
	rec := devNodePlan{Fits: np.Fits, Reason: np.Reason, Free: np.Free, Picked: np.Picked, Placement: np.Placement, GPUs: []devGPU{}}
	for _, g := range np.GPUs {
		d := devGPU{Index: g.Index, State: g.State, Status: g.Status, Reason: g.Reason}
		if g.Job != "" && g.Index < len(held) && held[g.Index] != '-' {
			d.Slot = string(held[g.Index])
		}
		rec.GPUs = append(rec.GPUs, d)
	}
	return rec
}

// TestDevPlans: the record the dev server replays is what plan() decides
// now; -update rewrites it.
func TestDevPlans(t *testing.T) {
	buf := encodeDevPlans(t, recordDevPlans(t))
	path := filepath.FromSlash(devPlansFile)
	if *updateDevPlans {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the dev server's plans: %v (go test ./app -run TestDevPlans -update writes them)", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Fatalf("%s is not what plan() decides now: go test ./app -run TestDevPlans -update rewrites it", devPlansFile)
	}
}

// encodeDevPlans writes r as JSON with one entry a line, in key order,
// so that a change of the rule shows as a readable diff.
func encodeDevPlans(t *testing.T, r devPlans) *bytes.Buffer {
	var buf bytes.Buffer
	line := func(v any) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	fmt.Fprintf(&buf, "{\"note\": %s,\n", line(r.Note))
	section := func(name string, keys []string, value func(string) any, last bool) {
		fmt.Fprintf(&buf, "%s: {\n", line(name))
		for i, k := range keys {
			sep := ","
			if i == len(keys)-1 {
				sep = ""
			}
			fmt.Fprintf(&buf, "%s: %s%s\n", line(k), line(value(k)), sep)
		}
		if last {
			buf.WriteString("}\n}\n")
		} else {
			buf.WriteString("},\n")
		}
	}
	section("nodes", slices.Sorted(maps.Keys(r.Nodes)), func(k string) any { return r.Nodes[k] }, false)
	section("picks", slices.Sorted(maps.Keys(r.Picks)), func(k string) any { return r.Picks[k] }, true)
	return &buf
}
