package jobs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// TestKeepForStarving: what a queued job that waited past StarveAfter
// keeps is an alloc.Queued grant in the ledger, decided by alloc.Fit: the
// free units it could use, up to what it asks; a MIG-by-profile job keeps
// instances of its profile, a share job the share on the GPU it would
// use. Other jobs are refused them with Fit's reason; the job itself
// takes them when the rest it asks frees up, and releasing it ends them.
func TestKeepForStarving(t *testing.T) {
	cases := []struct {
		name   string
		hold   []grantStep // granted first
		req    Request     // the starving job's
		kept   []string
		share  float64
		other  Request // then refused to another job
		refuse string
	}{
		{"whole GPUs: what is free, up to the count", []grantStep{{job: "a", req: Request{Count: 1}}},
			Request{Count: 2, Owner: "bob", Name: "big"}, []string{"GPU-0001"}, 0,
			Request{Count: 1}, "1 GPU asked, 0 free: GPU 0: job a; GPU 1: kept for queued job big of bob, waiting the longest; GPU 2: " + migOnWhy},
		{"MIG by profile: an instance of the profile", []grantStep{{job: "a", req: Request{Count: 1, Profile: "3g.40gb"}}},
			Request{Count: 2, Profile: "3g.40gb", Owner: "bob", Name: "mig"}, []string{"MIG-2"}, 0,
			Request{Count: 1, Profile: "3g.40gb"}, "kept for queued job mig of bob"},
		{"a share: the GPU it would use, its share", []grantStep{{job: "a", req: Request{Count: 1, Share: 0.75}},
			{job: "b", req: Request{Count: 1}}},
			Request{Count: 1, Share: 0.5, Owner: "bob", Name: "nb"}, []string{"GPU-0000"}, 0.5,
			Request{Count: 1, Share: 0.25}, "GPU 0: 0% of it is free"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			l, gpus := shareLedger()
			for _, s := range tt.hold {
				if _, err := l.Grant(s.job, s.req, gpus, nil); err != nil {
					t.Fatal(err)
				}
			}
			l.Rekeep([]Kept{{Job: "q", Want: tt.req}}, gpus, nil)
			var g alloc.Grant
			for _, x := range l.Grants() {
				if x.Holder.Kind == alloc.Queued {
					g = x
				}
			}
			if g.Holder.ID != "q" || !slices.Equal(g.Units, tt.kept) || g.Share != tt.share {
				t.Fatalf("kept %+v; want a Queued grant of q on %v (share %v)", g, tt.kept, tt.share)
			}
			_, err := l.Grant("other", tt.other, gpus, nil)
			if err == nil || !strings.Contains(err.Error(), tt.refuse) {
				t.Errorf("another job: %v; want it refused saying %q", err, tt.refuse)
			}
			for _, s := range tt.hold {
				l.Release(s.job)
			}
			got, err := l.Grant("q", tt.req, gpus, nil)
			if err != nil || !slices.Contains(got, tt.kept[0]) {
				t.Errorf("the starving job, once the others ended: %v %v; want it to take what it kept, %v", got, err, tt.kept)
			}
			l.Release("q")
			for _, x := range l.Grants() {
				if x.Holder.Kind == alloc.Queued {
					t.Errorf("released, q still keeps %+v", x)
				}
			}
		})
	}
}

// TestStarvingJobPublished: a starving queued job's kept GPUs are in the
// machine's grants record, as Queued grants naming it; a new job is told
// they are kept for it.
func TestStarvingJobPublished(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 2, &memStore{})
	ctx := context.Background()
	hold, _ := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1})
	big, _ := m.Submit(ctx, member("bob"), Spec{Image: "img", Name: "big", GPUs: 2, Queue: true})
	m.mu.Lock()
	m.jobs[big.ID].Created = time.Now().Add(-time.Hour)
	m.mu.Unlock()
	_, grants := m.Allocation()
	var kept []alloc.Grant
	for _, g := range grants {
		if g.Holder.Kind == alloc.Queued {
			kept = append(kept, g)
		}
	}
	if len(kept) != 1 || kept[0].Holder.ID != big.ID || kept[0].Holder.Member != "bob" || len(kept[0].Units) != 1 {
		t.Fatalf("published kept grants %+v; want big's one free GPU", kept)
	}
	_, err := m.Submit(ctx, member("dave"), Spec{Image: "img", GPUs: 1})
	if err == nil || !strings.Contains(err.Error(), "kept for queued job big of bob, waiting the longest") {
		t.Errorf("a new job: %v; want told the GPU is kept for big", err)
	}
	rt.exit(hold.Container, 0)
	waitState(t, m, big.ID, Running)
}
