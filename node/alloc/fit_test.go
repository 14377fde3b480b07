package alloc

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)

func gpus(node string, n int, mem uint64) []Unit {
	var out []Unit
	for i := range n {
		out = append(out, Unit{ID: fmt.Sprintf("%s-gpu%d", node, i), Kind: GPU, Node: node, Index: i, MemBytes: mem})
	}
	return out
}

func job(id, member string, units ...string) Grant {
	return Grant{Holder: Holder{Kind: Job, ID: id, Member: member}, Units: units}
}

func TestFit(t *testing.T) {
	a := gpus("a", 2, 80<<30)
	b := gpus("b", 4, 40<<30)
	both := append(append([]Unit{}, a...), b...)
	reserve := func(member string, from, until time.Time, units ...string) Grant {
		return Grant{Holder: Holder{Kind: Reservation, ID: "r-" + member, Member: member}, Units: units, From: from, Until: until}
	}
	mig := []Unit{
		{ID: "a-gpu0", Kind: GPU, Node: "a", Index: 0, MemBytes: 80 << 30, Down: "MIG on (ask for an instance by profile)"},
		{ID: "MIG-1", Kind: MIG, Node: "a", Index: 0, Parent: "a-gpu0", Profile: "3g.40gb", MemBytes: 40 << 30},
		{ID: "MIG-2", Kind: MIG, Node: "a", Index: 0, Parent: "a-gpu0", Profile: "1g.10gb", MemBytes: 10 << 30},
	}
	cases := []struct {
		name   string
		units  []Unit
		grants []Grant
		req    Request
		fits   bool
		node   string
		chosen []string
		why    string
	}{
		{"free machine", a, nil, Request{Count: 2}, true, "a", []string{"a-gpu0", "a-gpu1"}, ""},
		{"first machine full, second fits", both, []Grant{job("j1", "m1", "a-gpu0")}, Request{Count: 2}, true, "b", []string{"b-gpu0", "b-gpu1"}, ""},
		{"held", a, []Grant{job("j1", "m1", "a-gpu0")}, Request{Count: 2}, false, "", nil, "2 asked: GPU 0: job j1 of m1"},
		{"own grants do not keep a holder out", a, []Grant{job("j1", "m1", "a-gpu0")}, Request{Holder: Holder{Kind: Job, ID: "j1"}, Count: 2}, true, "a", nil, ""},
		{"ended grant frees", a, []Grant{{Holder: Holder{Kind: Job, ID: "j1"}, Units: []string{"a-gpu0"}, Until: t0}}, Request{Count: 2}, true, "a", nil, ""},
		{"memory", both, nil, Request{Count: 3, MemBytes: 48 << 30}, false, "", nil, "3 asked: GPUs 0, 1, 2, 3: 40960 MiB free, less than asked"},
		{"down", a, nil, Request{Count: 1, Units: []string{"a-gpu1"}}, true, "a", []string{"a-gpu1"}, ""},
		{"share packs onto a shared GPU", a, []Grant{{Holder: Holder{Kind: Job, ID: "s1"}, Units: []string{"a-gpu1"}, Share: 0.5, MemBytes: 20 << 30}}, Request{Count: 1, Share: 0.25, MemBytes: 20 << 30}, true, "a", []string{"a-gpu1"}, ""},
		{"shares add up to at most 1", a[:1], []Grant{{Holder: Holder{Kind: Job, ID: "s1"}, Units: []string{"a-gpu0"}, Share: 0.75}}, Request{Count: 1, Share: 0.5}, false, "", nil, "1 asked: GPU 0: 25% of it is free, less than the share asked"},
		{"share memory capped", a[:1], []Grant{{Holder: Holder{Kind: Job, ID: "s1"}, Units: []string{"a-gpu0"}, Share: 0.25, MemBytes: 70 << 30}}, Request{Count: 1, Share: 0.25, MemBytes: 20 << 30}, false, "", nil, "1 asked: GPU 0: 10240 MiB free, less than asked"},
		{"whole refused on a shared GPU", a[:1], []Grant{{Holder: Holder{Kind: Job, ID: "s1"}, Units: []string{"a-gpu0"}, Share: 0.25}}, Request{Count: 1}, false, "", nil, "1 asked: GPU 0: shared (75% free), and a whole GPU was asked"},
		{"share refused on a whole grant", a[:1], []Grant{job("j1", "", "a-gpu0")}, Request{Count: 1, Share: 0.25}, false, "", nil, "1 asked: GPU 0: job j1"},
		{"reservation ahead, no time limit", a, []Grant{reserve("m2", t0.Add(2*time.Hour), t0.Add(5*time.Hour), "a-gpu0", "a-gpu1")}, Request{Holder: Holder{Kind: Job, ID: "j", Member: "m1"}, Count: 1}, false, "", nil, "1 asked: GPUs 0, 1: reserved for m2 from Thu 26 Nov 16:00 to Thu 19:00"},
		{"reservation ahead, job ends before", a, []Grant{reserve("m2", t0.Add(2*time.Hour), t0.Add(5*time.Hour), "a-gpu0", "a-gpu1")}, Request{Holder: Holder{Kind: Job, ID: "j", Member: "m1"}, Count: 1, Until: t0.Add(time.Hour)}, true, "a", nil, ""},
		{"reservation's own member", a, []Grant{reserve("m2", t0, t0.Add(5*time.Hour), "a-gpu0", "a-gpu1")}, Request{Holder: Holder{Kind: Job, ID: "j", Member: "m2"}, Count: 2}, true, "a", nil, ""},
		{"reservation past", a, []Grant{reserve("m2", t0.Add(-3*time.Hour), t0, "a-gpu0", "a-gpu1")}, Request{Holder: Holder{Kind: Job, ID: "j", Member: "m1"}, Count: 2}, true, "a", nil, ""},
		{"reservations overlap", a, []Grant{reserve("m2", t0, t0.Add(3*time.Hour), "a-gpu0")}, Request{Holder: Holder{Kind: Reservation, ID: "r2", Member: "m3"}, Count: 2, Until: t0.Add(time.Hour)}, false, "", nil, "2 asked: GPU 0: reserved for m2 from Thu 26 Nov 14:00 to Thu 17:00"},
		{"a reservation ignores running jobs", a, []Grant{job("j1", "m1", "a-gpu0")}, Request{Holder: Holder{Kind: Reservation, ID: "r2", Member: "m3"}, Count: 2, Until: t0.Add(time.Hour)}, true, "a", nil, ""},
		{"MIG by profile", mig, []Grant{}, Request{Profile: "3g.40gb", Count: 1}, true, "a", []string{"MIG-1"}, ""},
		{"MIG on GPU refuses whole", mig, nil, Request{Count: 1}, false, "", nil, "1 asked: GPU 0: MIG on (ask for an instance by profile)"},
		{"owner present", a[:1], []Grant{{Holder: Holder{Kind: Owner, ID: "owner"}, Units: []string{"a-gpu0"}}}, Request{Count: 1}, false, "", nil, "1 asked: GPU 0: its owner is using it"},
		{"cluster", []Unit{{ID: "hpc", Kind: Cluster, Node: "c", Count: 8}}, []Grant{{Holder: Holder{Kind: SlurmJob, ID: "12"}, Units: []string{"hpc"}, GPUs: 6}}, Request{Count: 2}, true, "c", []string{"hpc"}, ""},
		{"cluster busy", []Unit{{ID: "hpc", Kind: Cluster, Node: "c", Count: 8}}, []Grant{{Holder: Holder{Kind: SlurmJob, ID: "12"}, Units: []string{"hpc"}, GPUs: 7}}, Request{Count: 2}, false, "", nil, "2 asked: cluster hpc: 1 GPUs free, fewer than asked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Fit(c.units, c.grants, c.req, t0)
			if d.Fits != c.fits || d.Fits && d.Node != c.node {
				t.Fatalf("fits %v on %q, want %v on %q (passed %v)", d.Fits, d.Node, c.fits, c.node, d.Passed)
			}
			if c.chosen != nil {
				var got []string
				for _, u := range d.Units {
					got = append(got, u.ID)
				}
				if fmt.Sprint(got) != fmt.Sprint(c.chosen) {
					t.Errorf("chose %v, want %v", got, c.chosen)
				}
			}
			if d.Why() != c.why {
				t.Errorf("why %q, want %q", d.Why(), c.why)
			}
		})
	}
}

func TestFitIsPure(t *testing.T) {
	units := gpus("a", 4, 80<<30)
	grants := []Grant{job("j1", "m1", "a-gpu0")}
	first := Fit(units, grants, Request{Count: 3}, t0)
	for range 3 {
		if again := Fit(units, grants, Request{Count: 3}, t0); fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("Fit gave %v, then %v", first, again)
		}
	}
	if len(grants[0].Units) != 1 || units[0].ID != "a-gpu0" {
		t.Fatal("Fit changed its arguments")
	}
}

// BenchmarkFit is 64 machines of 8 GPUs with 1,000 grants (the target: < 1 ms).
func BenchmarkFit(b *testing.B) {
	var units []Unit
	for n := range 64 {
		units = append(units, gpus(fmt.Sprintf("node%02d", n), 8, 80<<30)...)
	}
	var grants []Grant
	for i := range 1000 {
		u := units[(i*7)%(len(units)-8)] // the last machine stays free
		g := Grant{Holder: Holder{Kind: Job, ID: fmt.Sprint("j", i), Member: fmt.Sprint("m", i%5)}, Units: []string{u.ID}}
		if i%3 == 0 {
			g.Share, g.MemBytes = 0.25, 10<<30
		}
		if i%50 == 0 {
			g.Holder.Kind, g.From, g.Until = Reservation, t0.Add(time.Hour), t0.Add(3*time.Hour)
		}
		grants = append(grants, g)
	}
	req := Request{Holder: Holder{Kind: Job, ID: "new", Member: "m9"}, Count: 8, Until: t0.Add(30 * time.Minute)}
	b.ReportAllocs()
	for b.Loop() {
		if d := Fit(units, grants, req, t0); !d.Fits || d.Node != "node63" {
			b.Fatalf("fits %v on %s", d.Fits, d.Node)
		}
	}
}

// TestFree: how many of a unit's GPUs no grant in force holds, as Fit
// counts them: a cluster's GPUs less those its jobs hold; a GPU held
// whole, shared, down, or free; a grant not yet (or no longer) in force
// holds nothing.
func TestFree(t *testing.T) {
	cluster := Unit{ID: "slurm:hpc/gpu", Kind: Cluster, Count: 8}
	slurmJob := func(id string, n int) Grant {
		return Grant{Holder: Holder{Kind: SlurmJob, ID: id}, Units: []string{cluster.ID}, GPUs: n}
	}
	gpu := gpus("a", 1, 80<<30)[0]
	tests := []struct {
		name   string
		u      Unit
		grants []Grant
		want   int
	}{
		{"a cluster, none held", cluster, nil, 8},
		{"a cluster, two jobs", cluster, []Grant{slurmJob("1", 2), slurmJob("2", 3)}, 3},
		{"a cluster, more held than it has", cluster, []Grant{slurmJob("1", 6), slurmJob("2", 6)}, 0},
		{"a cluster down", Unit{ID: cluster.ID, Kind: Cluster, Count: 8, Down: "lost"}, nil, 0},
		{"a GPU, free", gpu, nil, 1},
		{"a GPU, held whole", gpu, []Grant{job("j", "m", gpu.ID)}, 0},
		{"a GPU, shared", gpu, []Grant{{Holder: Holder{Kind: Job, ID: "s"}, Units: []string{gpu.ID}, Share: 0.25}}, 0},
		{"a GPU, a grant from later", gpu, []Grant{{Holder: Holder{Kind: Job, ID: "j"}, Units: []string{gpu.ID}, From: t0.Add(time.Hour)}}, 1},
		{"a GPU, a grant over", gpu, []Grant{{Holder: Holder{Kind: Job, ID: "j"}, Units: []string{gpu.ID}, Until: t0}}, 1},
	}
	for _, tt := range tests {
		if got := Free(tt.u, tt.grants, t0); got != tt.want {
			t.Errorf("%s: Free = %d; want %d", tt.name, got, tt.want)
		}
	}
}
