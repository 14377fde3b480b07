package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/jobs"
)

const gib = uint64(1) << 30

// planPool is three machines: "big" (online, 2 GPUs of 80 GiB, GPU 0 held
// by a job of mike, GPU 1 free, busy at 90%), "small" (online, 2 GPUs of 16 GiB, GPU 1 used by a
// process outside labpool, idle) and "off" (offline, 1 GPU).
func planPool() ([]Node, []Job) {
	gpus := func(node string, mem uint64, util float64, procs ...int) []GPU {
		var out []GPU
		for i, p := range procs {
			out = append(out, GPU{Node: node, Index: i, UUID: node + "-gpu" + string(rune('0'+i)), Name: "NVIDIA Test",
				MemTotalBytes: mem, MemUsedBytes: mem / 4, UtilPercent: util, Processes: p})
		}
		return out
	}
	nodes := []Node{
		{ID: "BIG", Name: "big", Online: true, Containers: true, GPUs: gpus("BIG", 80*gib, 90, 1, 0)},
		{ID: "SMALL", Name: "small", Online: true, Containers: true, GPUs: gpus("SMALL", 16*gib, 5, 0, 3)},
		{ID: "OFF", Name: "off", Containers: true, GPUs: gpus("OFF", 80*gib, 0, 0)},
	}
	active := []Job{
		{Job: jobs.Job{ID: "j1", Name: "train", Node: "BIG", Owner: mikeID, State: jobs.Running, GPUs: []string{"BIG-gpu0"},
			Spec: jobs.Spec{Image: "x", Env: []string{"TOKEN=secret"}}}, NodeName: "big", OwnerName: "mike"},
		{Job: jobs.Job{ID: "j2", Name: "waits", Node: "SMALL", Owner: selfID, State: jobs.Queued, GPUs: []string{"SMALL-gpu0"}}, NodeName: "small", OwnerName: "zeta"},
	}
	return nodes, active
}

// states is "index:state" of each GPU of p, with the holder of a held one.
func states(p NodePlan) []string {
	var out []string
	for _, g := range p.GPUs {
		s := string(rune('0'+g.Index)) + ":" + g.State
		if g.State == GPUHeld {
			s += " " + g.JobName + "/" + g.OwnerName
		}
		out = append(out, s)
	}
	return out
}

func TestPlanGPUStates(t *testing.T) {
	nodes, active := planPool()
	p := plan(nodes, nil, jobs.Spec{MinGPUMemBytes: 40 * gib}, active)
	got := map[string][]string{}
	for _, np := range p.Nodes {
		got[np.NodeName] = states(np)
	}
	want := map[string][]string{
		"big":   {"0:held train/mike", "1:free"},
		"small": {"0:small", "1:busy"}, // a queued job holds nothing; a process outside labpool does
		"off":   {"0:free"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GPU states (-want +got):\n%s", d)
	}
	held := p.Nodes[0].GPUs[0]
	if held.Job != "j1" || held.Owner != mikeID {
		t.Errorf("held GPU names job %q of %q, want j1 of %s", held.Job, held.Owner, mikeID)
	}
	if p.Nodes[1].Free != 1 || p.Nodes[0].Free != 1 {
		t.Errorf("free counts %d, %d; want 1, 1 (a small GPU is free, only not a match)", p.Nodes[0].Free, p.Nodes[1].Free)
	}
}

func TestPlanPicks(t *testing.T) {
	nodes, active := planPool()
	for _, tc := range []struct {
		name     string
		named    string
		spec     jobs.Spec
		node     string
		fits     bool
		reason   string
		gpuState []string
	}{
		{name: "no GPU asked: least loaded", spec: jobs.Spec{}, node: "small", fits: true,
			reason: "small has 1 free GPU and is the least loaded that fits", gpuState: []string{"0:free", "1:busy"}},
		{name: "one GPU of 40 GiB: only big has one", spec: jobs.Spec{GPUs: 1, MinGPUMemBytes: 40 * gib}, node: "big", fits: true,
			reason: "big has 1 free GPU and is the least loaded that fits", gpuState: []string{"0:held train/mike", "1:free"}},
		{name: "two GPUs: none fits", spec: jobs.Spec{GPUs: 2}, fits: false,
			reason: "no machine fits:\n  big: 1 of 2 GPUs free that match (busy: GPU 0: job train of mike)\n  small: 1 of 2 GPUs free that match (busy: GPU 1: a process outside labpool)"},
		{name: "named, held GPU picked", named: "BIG", spec: jobs.Spec{GPUIDs: []int{0}}, node: "big", fits: false,
			reason: "GPU 0 is busy or absent (busy: GPU 0: job train of mike)", gpuState: []string{"0:held train/mike", "1:free"}},
		{name: "named, held GPU picked, queued", named: "BIG", spec: jobs.Spec{GPUIDs: []int{0}, Queue: true}, node: "big", fits: true,
			reason: "GPU 0 is busy or absent (busy: GPU 0: job train of mike)", gpuState: []string{"0:held train/mike", "1:free"}},
		{name: "named, offline", named: "OFF", spec: jobs.Spec{}, node: "off", fits: false, reason: "off is offline", gpuState: []string{"0:free"}},
		{name: "named, too many", named: "SMALL", spec: jobs.Spec{GPUs: 3}, node: "small", fits: false, reason: "has 2 GPUs, 3 asked", gpuState: []string{"0:free", "1:busy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var named *Node
			for i := range nodes {
				if nodes[i].ID == tc.named {
					named = &nodes[i]
				}
			}
			p := plan(nodes, named, tc.spec, active)
			if p.NodeName != tc.node || p.Fits != tc.fits || p.Reason != tc.reason {
				t.Errorf("plan = %q fits=%v %q\nwant %q fits=%v %q", p.NodeName, p.Fits, p.Reason, tc.node, tc.fits, tc.reason)
			}
			if d := cmp.Diff(tc.gpuState, states(p.NodePlan)); d != "" {
				t.Errorf("GPUs of the pick (-want +got):\n%s", d)
			}
			if len(p.Nodes) != len(nodes) {
				t.Errorf("plan lists %d machines, want %d", len(p.Nodes), len(nodes))
			}
		})
	}
}

// The launch dialog asks for a plan before an image is typed; a launch
// without one is refused.
func TestPlanWithoutImage(t *testing.T) {
	svc := poolFixture(t)
	ctx := context.Background()
	p, err := svc.Plan(ctx, LaunchRequest{})
	if err != nil {
		t.Fatalf("Plan without an image: %v", err)
	}
	nodes, err := svc.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Nodes) != len(nodes) {
		t.Errorf("the plan lists %d machines, the pool has %d", len(p.Nodes), len(nodes))
	}
	for i, np := range p.Nodes {
		if len(np.GPUs) != len(nodes[i].GPUs) {
			t.Errorf("%s: the plan lists %d GPUs, the machine has %d", np.NodeName, len(np.GPUs), len(nodes[i].GPUs))
		}
	}
	if _, err := svc.Launch(ctx, LaunchRequest{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Launch without an image: %v, want ErrInvalid", err)
	}
}

// A quarantined or lost GPU is planned as faulty with its reason, and a
// launch naming it does not fit, saying why.
func TestPlanFaultyGPU(t *testing.T) {
	nodes, active := planPool()
	nodes[1].GPUs[0].Health, nodes[1].GPUs[0].HealthReason = "quarantined", "XID 79 (GPU has fallen off the bus)"
	p := plan(nodes[1:2], nil, jobs.Spec{GPUIDs: []int{0}, Queue: true}, active) // never queued behind a fault
	g := p.Nodes[0].GPUs[0]
	if g.State != GPUFaulty || g.Reason != "quarantined: XID 79 (GPU has fallen off the bus)" {
		t.Fatalf("GPU 0 planned as %q (%q), want faulty with the fault", g.State, g.Reason)
	}
	if p.Fits || !strings.Contains(p.Reason, "gpu 0 quarantined: XID 79") {
		t.Errorf("a launch on the quarantined GPU: fits=%v reason=%q", p.Fits, p.Reason)
	}
	if p.Nodes[0].Free != 0 {
		t.Errorf("free = %d, want 0 (GPU 1 is busy outside labpool, GPU 0 quarantined)", p.Nodes[0].Free)
	}
}

// TestPlanJustJoined: a machine whose node record has not arrived yet
// (it joined moments ago) is not said to be unable to run containers,
// which blamed a healthy machine on the first run after a join.
func TestPlanJustJoined(t *testing.T) {
	nodes := []Node{
		{ID: "NEW", Name: "new", Online: true, GPUs: []GPU{{Node: "NEW", Index: 0, UUID: "NEW-gpu0", MemTotalBytes: 80 * gib}}},
		{ID: "LAP", Name: "laptop", Online: true, ContainersError: "its Docker engine is not reachable"},
	}
	p := plan(nodes, nil, jobs.Spec{GPUs: 1}, nil)
	reasons := map[string]string{}
	for _, np := range p.Nodes {
		reasons[np.NodeName] = np.Reason
	}
	if r := reasons["new"]; strings.HasPrefix(r, "cannot run containers") || !strings.Contains(r, "try again") {
		t.Errorf("just joined: %q; want that it has not said yet, and to try again", r)
	}
	if r := reasons["laptop"]; r != "cannot run containers: its Docker engine is not reachable" {
		t.Errorf("laptop: %q; want its own reason", r)
	}
}
