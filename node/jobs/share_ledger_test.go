package jobs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

var shareT0 = time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)

// shareLedger is a ledger of three GPUs at shareT0: GPU 0 and 1 whole
// (80 GiB), GPU 2 in MIG mode with two 3g.40gb instances and one 1g.10gb.
func shareLedger() (*Ledger, []gpu.Stats) {
	gpus := fakeGPUs(3)
	l := NewLedger()
	l.clock = func() time.Time { return shareT0 }
	l.SetTopology([]gpu.Info{
		{Index: 0, UUID: gpus[0].UUID}, {Index: 1, UUID: gpus[1].UUID},
		{Index: 2, UUID: gpus[2].UUID, MIG: &gpu.MIG{Supported: true, Enabled: true, Instances: []gpu.MIGInstance{
			{UUID: "MIG-1", Name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", MemTotalBytes: 40 << 30},
			{UUID: "MIG-2", Name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", MemTotalBytes: 40 << 30},
			{UUID: "MIG-3", Name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb", MemTotalBytes: 10 << 30},
		}}},
	})
	return l, gpus
}

// grantStep is one Grant and what it should give: the units, or an error
// saying err (refused: a *RefusedError; else a *BusyError).
type grantStep struct {
	job     string
	req     Request
	want    []string
	err     string
	refused bool
}

func TestLedgerGrantsThroughFit(t *testing.T) {
	reservation := func(member string, from, until time.Duration, units ...string) alloc.Grant {
		return alloc.Grant{Holder: alloc.Holder{Kind: alloc.Reservation, ID: "r-" + member, Member: member},
			Units: units, From: shareT0.Add(from), Until: shareT0.Add(until)}
	}
	owner := alloc.Grant{Holder: alloc.Holder{Kind: alloc.Owner, ID: "owner", Member: "lender"}, Units: []string{"GPU-0000"}}
	cases := []struct {
		name  string
		held  []alloc.Grant
		steps []grantStep
	}{
		{"shares pack onto one GPU", nil, []grantStep{
			{job: "a", req: Request{Count: 1, Share: 0.5}, want: []string{"GPU-0000"}},
			{job: "b", req: Request{Count: 1, Share: 0.25}, want: []string{"GPU-0000"}},
			{job: "c", req: Request{Count: 1, Share: 0.5}, want: []string{"GPU-0001"}},
			{job: "d", req: Request{Count: 1, Share: 0.25}, want: []string{"GPU-0000"}},
		}},
		{"shares of a GPU add up to at most 1", nil, []grantStep{
			{job: "a", req: Request{Count: 1, Share: 0.6}, want: []string{"GPU-0000"}},
			{job: "b", req: Request{Count: 1, Share: 0.6}, want: []string{"GPU-0001"}},
			{job: "c", req: Request{Count: 1, Share: 0.6}, err: "GPUs 0, 1: 40% of it is free, less than the share asked"},
		}},
		{"share memory caps add up to at most the GPU's", nil, []grantStep{
			{job: "a", req: Request{Count: 1, Share: 0.25, MemBytes: 60 << 30}, want: []string{"GPU-0000"}},
			{job: "b", req: Request{Count: 1, Share: 0.25, MemBytes: 30 << 30}, want: []string{"GPU-0001"}},
			{job: "c", req: Request{Count: 1, Share: 0.25, MemBytes: 60 << 30}, err: "GPU 0: 20480 MiB, less than asked; GPU 1: 51200 MiB, less than asked"},
		}},
		{"whole and shared never mix on a GPU", nil, []grantStep{
			{job: "a", req: Request{Count: 1, Share: 0.5}, want: []string{"GPU-0000"}},
			{job: "b", req: Request{Count: 2}, err: "GPU 0: shared (50% free), and a whole GPU was asked"},
			{job: "b", req: Request{Count: 1}, want: []string{"GPU-0001"}},
			{job: "c", req: Request{Count: 1, Share: 0.25}, want: []string{"GPU-0000"}},
			{job: "d", req: Request{Indexes: []int{1}, Share: 0}, err: "GPU 1: job b"},
		}},
		{"MIG instances by profile, placed like GPUs", nil, []grantStep{
			{job: "a", req: Request{Count: 1, Profile: "3g.40gb"}, want: []string{"MIG-1"}},
			{job: "b", req: Request{Count: 1, Profile: "3g.40gb"}, want: []string{"MIG-2"}},
			{job: "c", req: Request{Count: 1, Profile: "3g.40gb"}, err: "GPU 2: job a; GPU 2: job b"},
			{job: "c", req: Request{Count: 1, Profile: "1g.10gb"}, want: []string{"MIG-3"}},
			{job: "d", req: Request{Count: 3, Profile: "3g.40gb"}, err: "this machine has 2", refused: true},
			{job: "d", req: Request{Count: 1, Profile: "7g.80gb"}, err: "this machine has 0", refused: true},
			{job: "d", req: Request{Count: 3}, err: "GPU 2: MIG on"},
		}},
		{"MIG by UUID and by profile hold the same instances", nil, []grantStep{
			{job: "a", req: Request{MIG: []string{"MIG-2"}}, want: []string{"MIG-2"}},
			{job: "b", req: Request{Count: 2, Profile: "3g.40gb"}, err: "2 GPUs asked, 1 free: GPU 2: job a"},
			{job: "b", req: Request{Count: 1, Profile: "3g.40gb"}, want: []string{"MIG-1"}},
		}},
		{"a reservation ahead passes its GPUs over for a job without a time limit", []alloc.Grant{reservation("bob", 2*time.Hour, 5*time.Hour, "GPU-0000")}, []grantStep{
			{job: "a", req: Request{Count: 2, Owner: "alice"}, err: "GPU 0: reserved for bob from Thu 26 Nov 16:00 to Thu 19:00"},
			{job: "a", req: Request{Count: 1, Owner: "alice"}, want: []string{"GPU-0001"}},
		}},
		{"a job that ends before the reservation starts gets its GPUs", []alloc.Grant{reservation("bob", 2*time.Hour, 5*time.Hour, "GPU-0000", "GPU-0001")}, []grantStep{
			{job: "a", req: Request{Count: 1, Owner: "alice", Limit: 3 * time.Hour}, err: "reserved for bob"},
			{job: "a", req: Request{Count: 2, Owner: "alice", Limit: time.Hour}, want: []string{"GPU-0000", "GPU-0001"}},
		}},
		{"a reservation's own member's jobs use it in its span", []alloc.Grant{reservation("bob", -time.Hour, 5*time.Hour, "GPU-0000", "GPU-0001")}, []grantStep{
			{job: "a", req: Request{Count: 1, Owner: "alice", Limit: time.Minute}, err: "reserved for bob"},
			{job: "b", req: Request{Count: 2, Owner: "bob"}, want: []string{"GPU-0000", "GPU-0001"}},
		}},
		// The owner holds GPU 0 back from guests, not from their own jobs
		// (node/lend: the owner's grant covers every GPU while they are
		// at the machine).
		{"the lender's own use", []alloc.Grant{owner}, []grantStep{
			{job: "a", req: Request{Count: 2, Owner: "alice"}, err: "GPU 0: its owner is using it"},
			{job: "b", req: Request{Count: 1, Owner: "alice"}, want: []string{"GPU-0001"}},
			{job: "c", req: Request{Count: 1, Share: 0.5}, err: "GPU 0: its owner is using it; GPU 1: job b"},
			{job: "d", req: Request{Count: 1, Owner: "lender"}, want: []string{"GPU-0000"}},
		}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			l, gpus := shareLedger()
			l.SetHeld("test", tt.held)
			for i, s := range tt.steps {
				got, err := l.Grant(s.job, s.req, gpus, nil)
				var refused *RefusedError
				var busy *BusyError
				switch {
				case s.err == "" && (err != nil || !slices.Equal(got, s.want)):
					t.Fatalf("step %d (%s %+v): %v, %v; want %v", i, s.job, s.req, got, err, s.want)
				case s.err != "" && (err == nil || !strings.Contains(err.Error(), s.err)):
					t.Fatalf("step %d (%s %+v): %v, %v; want an error saying %q", i, s.job, s.req, got, err, s.err)
				case s.err != "" && s.refused != errors.As(err, &refused):
					t.Fatalf("step %d: %v; refused %v, want %v", i, err, !s.refused, s.refused)
				case s.err != "" && !s.refused && !errors.As(err, &busy):
					t.Fatalf("step %d: %v; want a *BusyError", i, err)
				}
			}
		})
	}
}

// TestLedgerRecordsShare: the grant keeps the share and its memory cap,
// and the published grants say them.
func TestLedgerRecordsShare(t *testing.T) {
	l, gpus := shareLedger()
	if _, err := l.Grant("a", Request{Count: 1, Share: 0.25, MemBytes: 20 << 30, Owner: "alice", Name: "nb", Limit: time.Hour}, gpus, nil); err != nil {
		t.Fatal(err)
	}
	if share, mem := l.share("a"); share != 0.25 || mem != 20<<30 {
		t.Errorf("share(a) = %v, %d; want 0.25, 20 GiB", share, mem)
	}
	want := alloc.Grant{Holder: alloc.Holder{Kind: alloc.Job, ID: "a", Member: "alice", Name: "nb"}, Units: []string{"GPU-0000"},
		Share: 0.25, MemBytes: 20 << 30, From: shareT0, Until: shareT0.Add(time.Hour)}
	if gs := l.Grants(); len(gs) != 1 || !grantEqual(gs[0], want) {
		t.Errorf("Grants() = %+v; want %+v", gs, want)
	}
}

func grantEqual(a, b alloc.Grant) bool {
	return a.Holder == b.Holder && slices.Equal(a.Units, b.Units) && a.Share == b.Share && a.MemBytes == b.MemBytes &&
		a.GPUs == b.GPUs && a.From.Equal(b.From) && a.Until.Equal(b.Until)
}

// TestShareReadopted: a job granted a share records it, and a restarted
// agent that adopts the job again restores the share (not the whole GPU):
// another share still fits beside it, and a whole GPU does not.
func TestShareReadopted(t *testing.T) {
	rt, st := newFakeRuntime(), &memStore{}
	m := newTestManager(t, rt, 1, st)
	ctx := context.Background()
	j, err := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUShare: 0.5, GPUMemBytes: 20 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if j.GPUShare != 0.5 || j.GPUMemBytes != 20<<30 || !slices.Equal(j.GPUs, []string{"GPU-0000"}) {
		t.Fatalf("job holds %v, share %v, mem %d; want GPU-0000, 0.5, 20 GiB", j.GPUs, j.GPUShare, j.GPUMemBytes)
	}
	m2 := newTestManager(t, rt.again(), 1, st)
	if g, ok := m2.Ledger().JobGrant(j.ID); !ok || g.Share != 0.5 || g.MemBytes != 20<<30 {
		t.Fatalf("after re-adoption the ledger holds %+v, %v; want the share 0.5 with 20 GiB", g, ok)
	}
	if _, err := m2.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1}); err == nil || !strings.Contains(err.Error(), "shared (50% free)") {
		t.Errorf("a whole GPU beside the adopted share: %v; want it refused as shared", err)
	}
	if k, err := m2.Submit(ctx, member("bob"), Spec{Image: "img", GPUShare: 0.5}); err != nil || k.GPUShare != 0.5 {
		t.Errorf("a second half beside the adopted share: %+v, %v", k, err)
	}
}

// TestAllocation: what the node publishes is its ledger's view: its
// units, naming the node, a job's grant with its share, and a GPU used
// outside labpool as an External grant.
func TestAllocation(t *testing.T) {
	gs := fakeGPUs(3)
	gs[2].Processes = []gpu.Process{{PID: 7}}
	m := startManager(t, newFakeRuntime(), fixedGPUs(gs), &memStore{}, nil)
	j, err := m.Submit(context.Background(), member("alice"), Spec{Image: "img", GPUShare: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	units, grants := m.Allocation()
	if len(units) != 3 || units[0].Node != "NODE" || units[2].ID != "GPU-0002" {
		t.Errorf("units %+v; want the 3 GPUs of NODE", units)
	}
	if len(grants) != 2 || grants[0].Holder.ID != j.ID || grants[0].Share != 0.25 || grants[0].Holder.Member != "alice" ||
		grants[1].Holder.Kind != alloc.External || !slices.Equal(grants[1].Units, []string{"GPU-0002"}) {
		t.Errorf("grants %+v; want alice's share, then GPU 2 outside labpool", grants)
	}
	d := alloc.Fit(units, grants, alloc.Request{Count: 2}, time.Now())
	if d.Fits || d.Why() != "2 asked: GPU 0: shared (75% free), and a whole GPU was asked; GPU 2: a process outside labpool" {
		t.Errorf("Fit on the published view: %+v, %q", d, d.Why())
	}
}

// TestHeldChangeWakesQueue: when what others hold changes (SetHeld: a
// lender takes the machine back or gives it, a reservation ends), the
// manager tries its queue then, not at its next poll; and a job queued
// behind the owner says so.
func TestHeldChangeWakesQueue(t *testing.T) {
	m := NewManager(DefaultConfig(), newFakeRuntime(), fixedGPUs(fakeGPUs(1)), nil, &memStore{}, testLog())
	if len(m.kick) != 0 {
		t.Fatal("a new manager's queue is kicked already")
	}
	m.Ledger().SetHeld("lend", nil)
	if len(m.kick) != 1 {
		t.Errorf("SetHeld did not wake the queue")
	}
	m.Ledger().SetHeld("lend", []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Owner, ID: "owner"}, Units: []string{"GPU-0000"}}})
	_, err := m.ledger.Grant("j", Request{Count: 1}, m.gpus.GPUs(), nil)
	if err == nil || !strings.Contains(err.Error(), "GPU 0: its owner is using it") {
		t.Errorf("a grant behind the owner: %v; want it to say the owner uses GPU 0", err)
	}
}
