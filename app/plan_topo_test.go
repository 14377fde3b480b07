package app

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// nvlinkNode is an online machine of 8 GPUs in two NVLink islands (0-3 and
// 4-7, 4 links a pair, PIX within, SYS across) at 40 °C, but GPU 2 at
// hotC and throttling (hw_thermal_slowdown) when hotC is above 0.
func nvlinkNode(id string, hotC float64) Node {
	n := Node{ID: id, Name: strings.ToLower(id), Online: true, Containers: true}
	for i := range 8 {
		g := GPU{Node: id, Index: i, UUID: fmt.Sprintf("%s-gpu%d", id, i), Name: "NVIDIA H100", MemTotalBytes: 80 * gib,
			TempC: 40, Health: gpu.HealthOK, Links: []gpu.Link{}}
		for k := range 8 {
			if k == i {
				continue
			}
			l := gpu.Link{Peer: k, PeerUUID: fmt.Sprintf("%s-gpu%d", id, k), PCIe: "SYS"}
			if i/4 == k/4 {
				l.NVLinks, l.PCIe = 4, "PIX"
			}
			g.Links = append(g.Links, l)
		}
		n.GPUs = append(n.GPUs, g)
	}
	if hotC > 0 {
		n.GPUs[2].TempC, n.GPUs[2].Health, n.GPUs[2].HealthReason = hotC, gpu.HealthWarning, "throttled: hw_thermal_slowdown"
	}
	return n
}

// TestPlanPlacement: the plan previews what the machine would grant
// (jobs.Place) and says why.
func TestPlanPlacement(t *testing.T) {
	tests := []struct {
		name   string
		node   Node
		active []Job
		want   int
		picked []int
		says   []string
	}{
		{"the throttling GPU at 91 °C is avoided", nvlinkNode("NV", 91), nil, 4, []int{4, 5, 6, 7},
			[]string{"every pair NVLinked (at least 4 links)", "avoided GPU 2 (throttled: hw_thermal_slowdown at 91 °C)"}},
		{"an NVLinked pair, not the lowest indexes", nvlinkNode("NV", 0),
			[]Job{{Job: jobs.Job{ID: "j", Node: "NV", State: jobs.Running, GPUs: []string{"NV-gpu0", "NV-gpu1", "NV-gpu2"}}}}, 2,
			[]int{4, 5}, []string{"every pair NVLinked"}},
		{"an NVLinked set without the throttling GPU", nvlinkNode("NV", 91), nil, 3, []int{0, 1, 3},
			[]string{"avoided GPU 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan([]Node{tt.node}, nil, jobs.Spec{GPUs: tt.want}, tt.active)
			if !p.Fits || !slices.Equal(p.Picked, tt.picked) {
				t.Fatalf("plan fits=%v picked %v (%s); want %v", p.Fits, p.Picked, p.Reason, tt.picked)
			}
			for _, s := range tt.says {
				if !strings.Contains(p.Reason, s) || !strings.Contains(p.Placement, s) {
					t.Errorf("reason %q / placement %q lacks %q", p.Reason, p.Placement, s)
				}
			}
		})
	}
}

// TestPlanAgreesWithGrant: the node grants what the plan previewed, from
// the same figures (one rule, jobs.Place).
func TestPlanAgreesWithGrant(t *testing.T) {
	n := nvlinkNode("NV", 91)
	l := jobs.NewLedger()
	var infos []gpu.Info
	var stats []gpu.Stats
	for _, g := range n.GPUs {
		infos = append(infos, gpu.Info{Index: g.Index, UUID: g.UUID, Links: g.Links})
		stats = append(stats, gpu.Stats{Index: g.Index, UUID: g.UUID, TempC: g.TempC, Health: g.Health,
			HealthReason: g.HealthReason, MemTotalBytes: g.MemTotalBytes})
	}
	l.SetTopology(infos)
	for want := 1; want <= 7; want++ {
		p := plan([]Node{n}, nil, jobs.Spec{GPUs: want}, nil)
		got, err := l.Grant(fmt.Sprint("job", want), jobs.Request{Count: want}, stats, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Release(fmt.Sprint("job", want))
		var idx []int
		for _, u := range got {
			idx = append(idx, slices.IndexFunc(n.GPUs, func(g GPU) bool { return g.UUID == u }))
		}
		if !slices.Equal(idx, p.Picked) {
			t.Errorf("%d GPUs: the plan picked %v, the node granted %v", want, p.Picked, idx)
		}
	}
}

// TestPlanMIG: a MIG instance asked by UUID plans onto the machine that has
// it, free or busy as the jobs hold it; its GPU is kept from counts.
func TestPlanMIG(t *testing.T) {
	const mig = "MIG-5c9f1a2e-6b1d-5b8e-9a3f-0000000000a1"
	withMIG := nvlinkNode("A", 0)
	withMIG.GPUs[3].MIG = &gpu.MIG{Supported: true, Enabled: true, Instances: []gpu.MIGInstance{{UUID: mig, MemTotalBytes: 20 * gib}}}
	other := nvlinkNode("B", 0)
	nodes := []Node{other, withMIG}
	p := plan(nodes, nil, jobs.Spec{MIGIDs: []string{mig}}, nil)
	if !p.Fits || p.Node != "A" {
		t.Errorf("plan %q fits=%v (%s); want A", p.Node, p.Fits, p.Reason)
	}
	if np := p.Nodes[0]; np.Fits || !strings.Contains(np.Reason, "has no MIG instance "+mig) {
		t.Errorf("B: fits=%v %q; want no such instance", np.Fits, np.Reason)
	}
	active := []Job{{Job: jobs.Job{ID: "j", Name: "train", Node: "A", State: jobs.Running, GPUs: []string{mig}}, OwnerName: "mike"}}
	p = plan(nodes, nil, jobs.Spec{MIGIDs: []string{mig}}, active)
	if p.Fits || !strings.Contains(p.Reason, mig+": job train of mike") {
		t.Errorf("held instance: fits=%v %q", p.Fits, p.Reason)
	}
	p = plan([]Node{withMIG}, nil, jobs.Spec{GPUs: 8}, nil)
	if p.Fits || !strings.Contains(p.Reason, "GPU 3: MIG on") {
		t.Errorf("8 GPUs where GPU 3 is in MIG mode: fits=%v %q", p.Fits, p.Reason)
	}
}

// TestPlanPrefersCoolMachine: a 4-GPU job goes to a busier machine with 4
// cool NVLinked GPUs free rather than to an idle one whose free GPUs
// include one throttling at 91 °C.
func TestPlanPrefersCoolMachine(t *testing.T) {
	idle := nvlinkNode("IDLE", 91) // GPU 2 throttling
	held := []Job{{Job: jobs.Job{ID: "j", Node: "IDLE", State: jobs.Running, GPUs: []string{"IDLE-gpu4", "IDLE-gpu5", "IDLE-gpu6", "IDLE-gpu7"}}}}
	busy := nvlinkNode("BUSY", 0)
	for i := range busy.GPUs {
		busy.GPUs[i].UtilPercent = 60
	}
	p := plan([]Node{idle, busy}, nil, jobs.Spec{GPUs: 4}, held)
	if p.Node != "BUSY" || !strings.Contains(p.Reason, "cooler or better NVLinked than those of less loaded machines") {
		t.Errorf("plan %s: %q; want BUSY, said why", p.NodeName, p.Reason)
	}
	// Alike GPUs: the less loaded machine, as before.
	p = plan([]Node{nvlinkNode("IDLE", 0), busy}, nil, jobs.Spec{GPUs: 4}, nil)
	if p.Node != "IDLE" || !strings.Contains(p.Reason, "least loaded") {
		t.Errorf("plan %s: %q; want IDLE, the least loaded", p.NodeName, p.Reason)
	}
}

// TestPlanSaysSockets: the plan says when the GPUs it picks, or those
// asked by index, sit on different CPU sockets (NVML's SYS), and whether
// their traffic crosses the CPUs' interconnect; GPUs on one socket, or
// where NVML could not tell, say nothing of it.
func TestPlanSaysSockets(t *testing.T) {
	pcieOnly := nvlinkNode("PC", 0) // the same sockets, no NVLink at all
	for i := range pcieOnly.GPUs {
		for k := range pcieOnly.GPUs[i].Links {
			pcieOnly.GPUs[i].Links[k].NVLinks = 0
		}
	}
	unknown := nvlinkNode("UN", 0)
	for i := range unknown.GPUs {
		for k := range unknown.GPUs[i].Links {
			unknown.GPUs[i].Links[k].NVLinks, unknown.GPUs[i].Links[k].PCIe = 0, ""
		}
	}
	busy := func(id string, idx ...int) []Job {
		var uuids []string
		for _, i := range idx {
			uuids = append(uuids, fmt.Sprintf("%s-gpu%d", id, i))
		}
		return []Job{{Job: jobs.Job{ID: "j", Node: id, State: jobs.Running, GPUs: uuids}}}
	}
	for _, tt := range []struct {
		name   string
		node   Node
		spec   jobs.Spec
		active []Job
		says   string // "" for nothing of sockets
	}{
		{"four on one socket", nvlinkNode("NV", 0), jobs.Spec{GPUs: 4}, nil, ""},
		{"two free on each socket, PCIe only", pcieOnly, jobs.Spec{GPUs: 4}, busy("PC", 0, 1, 4, 5),
			"GPUs 2,3 and 6,7 sit on different CPU sockets (NUMA nodes): traffic between them crosses the CPUs' interconnect"},
		{"six, NVLink within sockets only", nvlinkNode("NV", 0), jobs.Spec{GPUs: 6}, nil,
			"GPUs 0,1,2,3 and 4,5 sit on different CPU sockets (NUMA nodes): traffic between them crosses the CPUs' interconnect"},
		{"asked by index", pcieOnly, jobs.Spec{GPUIDs: []int{1, 5}}, nil,
			"GPUs 1 and 5 sit on different CPU sockets (NUMA nodes): traffic between them crosses the CPUs' interconnect"},
		{"NVML could not tell", unknown, jobs.Spec{GPUIDs: []int{1, 5}}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := plan([]Node{tt.node}, nil, tt.spec, tt.active)
			named := plan([]Node{tt.node}, &tt.node, tt.spec, tt.active)
			if !p.Fits || !named.Fits {
				t.Fatalf("plan fits=%v (%s), named fits=%v (%s)", p.Fits, p.Reason, named.Fits, named.Reason)
			}
			for _, r := range []string{p.Reason, named.Reason} {
				switch {
				case tt.says == "" && strings.Contains(r, "socket"):
					t.Errorf("reason %q speaks of sockets", r)
				case tt.says != "" && !strings.Contains(r, tt.says):
					t.Errorf("reason %q lacks %q", r, tt.says)
				}
			}
		})
	}
}
