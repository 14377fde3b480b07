package app

import (
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// TestPlanOnPublishedGrants: a machine that publishes its grants is
// planned on them, by alloc.Fit: a reservation ahead passes a GPU over
// (but for its own member), shares pack onto a shared GPU, and a whole GPU
// is never planned onto a shared one.
func TestPlanOnPublishedGrants(t *testing.T) {
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	n := Node{ID: "A", Name: "a", Online: true, Containers: true, GPUs: []GPU{
		{Index: 0, UUID: "A-gpu0", MemTotalBytes: 80 * gib}, {Index: 1, UUID: "A-gpu1", MemTotalBytes: 80 * gib}}}
	n.Alloc = &Allocation{Units: []alloc.Unit{
		{ID: "A-gpu0", Kind: alloc.GPU, Node: "A", Index: 0, MemBytes: 80 * gib},
		{ID: "A-gpu1", Kind: alloc.GPU, Node: "A", Index: 1, MemBytes: 80 * gib},
	}, Grants: []alloc.Grant{
		{Holder: alloc.Holder{Kind: alloc.Reservation, ID: "r1", Member: mikeID}, Units: []string{"A-gpu0"}, From: at.Add(time.Hour), Until: at.Add(3 * time.Hour)},
		{Holder: alloc.Holder{Kind: alloc.Job, ID: "s1", Member: alphaID, Name: "nb"}, Units: []string{"A-gpu1"}, Share: 0.5, MemBytes: 40 * gib},
	}}
	active := []Job{{Job: jobs.Job{ID: "s1", Name: "nb", Node: "A", Owner: alphaID, State: jobs.Running, GPUs: []string{"A-gpu1"}, GPUShare: 0.5}, OwnerName: "alpha"}}
	cases := []struct {
		name string
		spec jobs.Spec
		who  string
		fits bool
		says []string
	}{
		{"a whole GPU: one reserved ahead, one shared", jobs.Spec{GPUs: 1}, selfID, false,
			[]string{"GPU 0: reserved for MIKE-CCCC from Thu 26 Nov", "GPU 1: shared (50% free), and a whole GPU was asked"}},
		{"the reservation's own member", jobs.Spec{GPUs: 1}, mikeID, true, []string{"1 of 2 GPUs free"}},
		{"a share packs onto the shared GPU", jobs.Spec{GPUShare: 0.5}, selfID, true, []string{"a 50% share of a GPU free on GPU 1"}},
		{"a share too large", jobs.Spec{GPUShare: 0.75}, selfID, false, []string{"GPU 1: 50% of it is free, less than the share asked"}},
		{"a share's memory over what is left", jobs.Spec{GPUShare: 0.25, GPUMemBytes: 50 * gib}, selfID, false, []string{"GPU 1: 40960 MiB free, less than asked"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			p := planAt([]Node{n}, &n, tt.spec, active, at, tt.who)
			if p.Fits != tt.fits {
				t.Errorf("fits %v (%s); want %v", p.Fits, p.Reason, tt.fits)
			}
			for _, s := range tt.says {
				if !strings.Contains(p.Reason, s) {
					t.Errorf("reason %q lacks %q", p.Reason, s)
				}
			}
		})
	}
	// The GPUs' states say the same.
	p := planAt([]Node{n}, &n, jobs.Spec{GPUs: 1}, active, at, selfID)
	if g := p.GPUs; g[0].State != GPUBusy || !strings.Contains(g[0].Reason, "reserved") || g[1].State != GPUBusy || !strings.Contains(g[1].Reason, "shared") {
		t.Errorf("GPU states %+v; want GPU 0 reserved, GPU 1 shared", g)
	}
}

// TestPlanMIGProfile: MIG instances asked by profile plan as the machine
// places them: onto a free instance of that profile, busy while jobs hold
// them all, refused where the machine has too few of them.
func TestPlanMIGProfile(t *testing.T) {
	n := nvlinkNode("A", 0)
	n.GPUs[3].MIG = &gpu.MIG{Supported: true, Enabled: true, Instances: []gpu.MIGInstance{
		{UUID: "MIG-a", Name: "NVIDIA H100 MIG 3g.40gb", MemTotalBytes: 40 * gib},
		{UUID: "MIG-b", Name: "NVIDIA H100 MIG 3g.40gb", MemTotalBytes: 40 * gib},
	}}
	held := []Job{{Job: jobs.Job{ID: "j", Name: "train", Node: "A", State: jobs.Running, GPUs: []string{"MIG-a"}}, OwnerName: "mike"}}
	cases := []struct {
		name   string
		spec   jobs.Spec
		active []Job
		fits   bool
		says   string
	}{
		{"two free", jobs.Spec{MIGProfile: "3g.40gb", GPUs: 2}, nil, true, "2 MIG instances free"},
		{"one held", jobs.Spec{MIGProfile: "3g.40gb", GPUs: 2}, held, false, "MIG-a: job train of mike"},
		{"one held, the other free", jobs.Spec{MIGProfile: "3g.40gb"}, held, true, "1 MIG instances free"},
		{"too few on the machine", jobs.Spec{MIGProfile: "3g.40gb", GPUs: 3}, nil, false, `refused by rule "mig profile"`},
		{"no such profile", jobs.Spec{MIGProfile: "1g.10gb"}, nil, false, "this machine has 0"},
	}
	for _, tt := range cases {
		p := planAt([]Node{n}, &n, tt.spec, tt.active, time.Now(), selfID)
		if p.Fits != tt.fits || !strings.Contains(p.Reason, tt.says) {
			t.Errorf("%s: fits %v (%s); want %v saying %q", tt.name, p.Fits, p.Reason, tt.fits, tt.says)
		}
	}
}

// TestPlanKeptForStarvingJob: a machine's grants record holds a GPU as
// kept for a queued job that waited the longest (alloc.Queued): the plan
// says so, naming the job and its owner as the pool knows them, and a
// new job does not fit there.
func TestPlanKeptForStarvingJob(t *testing.T) {
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	n := Node{ID: "A", Name: "a", Online: true, Containers: true, GPUs: []GPU{{Index: 0, UUID: "A-gpu0", MemTotalBytes: 80 * gib}}}
	n.Alloc = &Allocation{Units: []alloc.Unit{{ID: "A-gpu0", Kind: alloc.GPU, Node: "A", Index: 0, MemBytes: 80 * gib}},
		Grants: []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Queued, ID: "big1", Member: mikeID, Name: "big"}, Units: []string{"A-gpu0"}}}}
	active := []Job{{Job: jobs.Job{ID: "big1", Name: "big", Node: "A", Owner: mikeID, State: jobs.Queued}, OwnerName: "mike"}}
	p := planAt([]Node{n}, &n, jobs.Spec{GPUs: 1}, active, at, selfID)
	if p.Fits || !strings.Contains(p.Reason, "GPU 0: kept for queued job big of mike, waiting the longest") {
		t.Errorf("plan: fits %v, %q; want GPU 0 kept for mike's queued job big", p.Fits, p.Reason)
	}
	if g := p.GPUs[0]; g.State != GPUBusy || g.Status != "kept for queued job big of mike, waiting the longest" {
		t.Errorf("GPU 0: %s %q", g.State, g.Status)
	}
}
