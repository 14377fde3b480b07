package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// TestPlanSuggestsAShare: after this member's run of a job on one whole
// GPU of mike's machine, peaking at 18 GiB and 30% SM, the plan of the
// same job suggests the share it would fit; a job that asks a share
// already, a run proven by someone else, and a run of another job
// suggest nothing.
func TestPlanSuggestsAShare(t *testing.T) {
	db := openDB(t)
	me, meID := memberKey(1)
	other, otherID := memberKey(2)
	putMember(t, db, meID, "me", false)
	putMember(t, db, otherID, "other", false)
	putMember(t, db, mikeID, "mike", false)
	putNode(t, db, mikeID, NodeRecord{Info: agent.Info{ID: mikeID, Name: "mike"}, Containers: true})
	start, end := t0.Add(-10*time.Minute), t0.Add(-5*time.Minute)
	for at := start.Add(-time.Minute); at.Before(t0); at = at.Add(time.Second) {
		s := agent.Sample{Time: at, GPUs: []gpu.Stats{{Index: 0, MemTotalBytes: 80 << 30}, {Index: 1, MemTotalBytes: 80 << 30, MemUsedBytes: 70 << 30, UtilPercent: 100}}}
		if !at.Before(start) && at.Before(end) {
			s.GPUs[0].MemUsedBytes, s.GPUs[0].UtilPercent = 12<<30, 20
			if at.Sub(start) == 2*time.Minute {
				s.GPUs[0].MemUsedBytes, s.GPUs[0].UtilPercent = 18<<30, 30 // the peak
			}
		}
		putRecord(t, db, mikeID, history.KindSample1s, history.Key(at), at, history.Encode(history.FromSample(s)))
	}
	// Its live record carries the GPUs' totals.
	live := agent.Sample{Time: t0, GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-0", MemTotalBytes: 80 << 30}, {Index: 1, UUID: "GPU-1", MemTotalBytes: 80 << 30}}}
	putRecord(t, db, mikeID, history.KindLive, "", t0, mustJSON(t, live))
	svc := newService(t, db, Self{ID: meID, Name: "me"}, fakeLive{mikeID: true}, nil)
	svc.now = func() time.Time { return t0 }
	ctx := context.Background()
	run := func(s jobs.LaunchSigner, owner, name string) jobs.Job {
		j := proven(t, s, owner, mikeID, jobs.Job{Name: name, Node: mikeID, Spec: jobs.Spec{Name: name, Image: "nb:1", GPUs: 1},
			State: jobs.Exited, GPUIndexes: []int{0}, GPUs: []string{"GPU-0"}, Started: &start, Finished: &end, Created: start})
		putRecord(t, db, mikeID, KindJob, j.ID, end, mustJSON(t, j))
		return j
	}
	svc.rememberLaunch(ctx, run(me, meID, "notebook"))
	// Among this machine's launches, one whose record is proven by another
	// member (mike's machine swapped it), and one claimed without proof.
	svc.rememberLaunch(ctx, run(other, otherID, "theirs"))
	forged := jobs.Job{ID: "f00df00df00df00d", Name: "forged", Node: mikeID, Owner: meID, Spec: jobs.Spec{Name: "forged", Image: "nb:1", GPUs: 1},
		State: jobs.Exited, GPUIndexes: []int{0}, GPUs: []string{"GPU-0"}, Started: &start, Finished: &end, Created: start}
	putRecord(t, db, mikeID, KindJob, forged.ID, end, mustJSON(t, forged))
	svc.rememberLaunch(ctx, forged)
	// A run of "notebook" this machine did not launch: not read at all.
	run(me, meID, "unremembered")
	tests := []struct {
		name string
		spec jobs.Spec
		want string
	}{
		{"the same job again", jobs.Spec{Name: "notebook", Image: "nb:1", GPUs: 1}, "peaked at 18 GiB and 30% SM: `--gpu-share 0.5 --gpu-mem 24GiB` would fit"},
		{"asks a share already", jobs.Spec{Name: "notebook", Image: "nb:1", GPUShare: 0.5}, ""},
		{"asks two GPUs", jobs.Spec{Name: "notebook", Image: "nb:1", GPUs: 2}, ""},
		{"another member's run", jobs.Spec{Name: "theirs", Image: "nb:1", GPUs: 1}, ""},
		{"never run", jobs.Spec{Name: "new", Image: "nb:1", GPUs: 1}, ""},
		{"a run claimed without proof", jobs.Spec{Name: "forged", Image: "nb:1", GPUs: 1}, ""},
		{"a run this machine did not launch", jobs.Spec{Name: "unremembered", Image: "nb:1", GPUs: 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := svc.Plan(context.Background(), LaunchRequest{Spec: tt.spec})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if p.Suggestion != nil {
				got = p.Suggestion.Text
			}
			if got != tt.want {
				t.Errorf("suggestion %q; want %q", got, tt.want)
			}
		})
	}
}

// TestPlanShareNeedsAGPU: a share is planned on a machine with a free
// GPU, never on one without GPUs.
func TestPlanShareNeedsAGPU(t *testing.T) {
	nodes := []Node{
		{ID: alphaID, Name: "alpha", Online: true, Containers: true},
		{ID: mikeID, Name: "mike", Online: true, Containers: true, GPUs: []GPU{{Node: mikeID, Index: 0, UUID: "GPU-0", MemTotalBytes: 80 << 30}}},
	}
	p := plan(nodes, nil, jobs.Spec{Image: "nb:1", GPUShare: 0.25}, nil)
	if !p.Fits || p.Node != mikeID {
		t.Fatalf("plan of a share: fits %v on %q (%s); want mike, which has a GPU", p.Fits, p.Node, p.Reason)
	}
	if p := plan(nodes[:1], nil, jobs.Spec{Image: "nb:1", GPUShare: 0.25}, nil); p.Fits {
		t.Errorf("a share fits on a machine without GPUs: %s", p.Reason)
	}
}

// TestRememberLaunchBounded: the launches remembered are the latest
// maxLaunches, each once.
func TestRememberLaunchBounded(t *testing.T) {
	svc := newService(t, openDB(t), Self{ID: selfID, Name: "self"}, nil, nil)
	ctx := context.Background()
	for i := range maxLaunches + 10 {
		svc.rememberLaunch(ctx, jobs.Job{Node: mikeID, ID: fmt.Sprintf("job-%03d", i)})
	}
	svc.rememberLaunch(ctx, jobs.Job{Node: mikeID, ID: "job-050"}) // again: moves to the end
	refs := svc.launches(ctx)
	if len(refs) != maxLaunches || refs[0].Job != "job-010" || refs[len(refs)-1].Job != "job-050" {
		t.Fatalf("%d launches remembered, first %v last %v", len(refs), refs[0], refs[len(refs)-1])
	}
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r.Job] {
			t.Errorf("%s remembered twice", r.Job)
		}
		seen[r.Job] = true
	}
}
