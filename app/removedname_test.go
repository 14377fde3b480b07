package app

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// TestRemovedMemberKeepsName: bob launched a job that ended and one that
// still holds a GPU of alpha's, then was removed from the pool (pool
// remove bob-laptop). Everywhere people read who ran what (the jobs list
// and its JSON, the GPU a job holds, the report by member) bob's jobs and
// hours keep his name, marked "(removed)", and stay his (verified): not
// his device's short ID, not "(unverified)"; readmitted, they are his
// again, unmarked. A device the pool never admitted is still no member.
func TestRemovedMemberKeepsName(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	bob, bobID := memberKey(6)
	putMember(t, db, bobID, "bob-laptop", false)
	stranger, strangerID := memberKey(7)

	start := t0.Add(-2 * time.Hour)
	end := start.Add(time.Hour)
	ended := proven(t, bob, bobID, alphaID, jobs.Job{Name: "ended", Node: alphaID, State: jobs.Exited,
		GPUIndexes: []int{0}, Started: &start, Finished: &end, Created: start, Spec: jobs.Spec{Image: "img", GPUs: 1}})
	running := proven(t, bob, bobID, alphaID, jobs.Job{Name: "running", Node: alphaID, State: jobs.Running,
		GPUIndexes: []int{1}, Started: &start, Created: start, Spec: jobs.Spec{Image: "img2", GPUs: 1}})
	foreign := proven(t, stranger, strangerID, alphaID, jobs.Job{Name: "foreign", Node: alphaID, State: jobs.Exited,
		GPUIndexes: []int{2}, Started: &start, Finished: &end, Created: start, Spec: jobs.Spec{Image: "img3", GPUs: 1}})
	for _, j := range []jobs.Job{ended, running, foreign} {
		putRecord(t, db, alphaID, KindJob, j.ID, start, mustJSON(t, j))
	}
	s := testSample(t0, 20, 4)
	s.Holding.HoldGPU(s.GPUs[1].UUID, alloc.Holder{Kind: alloc.Job, ID: running.ID})
	putSample(t, db, alphaID, history.KindSample1s, s)

	svc := newService(t, db, Self{ID: selfID, ShortID: shortID(selfID), Name: "zeta"}, fakeLive{alphaID: true}, nil)
	svc.now = func() time.Time { return t0 }

	// Each view says whose job (or hours) it shows: the owner's ID and
	// name, and whether the owner is proven.
	type owner struct {
		id, name string
		verified bool
	}
	views := []struct {
		name string
		read func(t *testing.T) map[string]owner // by job name
	}{
		{"jobs", func(t *testing.T) map[string]owner {
			all, err := svc.Jobs(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]owner{}
			for _, j := range all {
				var wire struct { // as ps --json and the Jobs view read it
					Owner     string `json:"owner"`
					OwnerName string `json:"owner_name"`
				}
				if err := json.Unmarshal(mustJSON(t, j), &wire); err != nil {
					t.Fatal(err)
				}
				out[j.Name] = owner{wire.Owner, wire.OwnerName, j.OwnerVerified}
			}
			return out
		}},
		{"gpus", func(t *testing.T) map[string]owner {
			gpus, err := svc.GPUs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]owner{}
			for _, g := range gpus {
				if g.Job != "" {
					out[g.JobName] = owner{g.JobOwner, g.JobOwnerName, g.JobOwner != ""}
				}
			}
			return out
		}},
		{"report by member", func(t *testing.T) map[string]owner {
			rep, err := svc.Report(ctx, ReportRequest{Since: 24 * 3600, Until: t0.Unix(), By: ReportByMember})
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]owner{}
			for _, row := range rep.Rows {
				if row.Key == bobID && row.GPUHoursGranted > 0 {
					// bob's row holds both his jobs: the ended one's hour and
					// the running one's two.
					out["ended"] = owner{row.Key, row.Label, true}
				}
				if row.Key == strangerID {
					out["foreign"] = owner{row.Key, row.Label, true}
				}
			}
			return out
		}},
	}
	check := func(t *testing.T, wantName string) {
		for _, v := range views {
			got := v.read(t)
			for _, job := range []string{"ended", "running"} {
				o, ok := got[job]
				if v.name == "report by member" && job == "running" {
					continue // one row per member
				}
				if v.name == "gpus" && job == "ended" {
					continue // it holds no GPU
				}
				if want := (owner{bobID, wantName, true}); !ok || o != want {
					t.Errorf("%s: job %s reads as %+v (listed %v); want %+v", v.name, job, o, ok, want)
				}
			}
			if o, ok := got["foreign"]; ok && (o.verified && o.id == strangerID) {
				t.Errorf("%s: the job of a device the pool never admitted reads as its own: %+v", v.name, o)
			}
		}
	}
	t.Run("member", func(t *testing.T) { check(t, "bob-laptop") })

	// pool remove bob-laptop: the log's tombstone, a later version.
	if _, err := db.PutMember(ctx, store.MemberRow{ID: bobID, Name: "bob-laptop", Version: 2, Removed: true, AddedAt: t0, AddedBy: selfID}); err != nil {
		t.Fatal(err)
	}
	t.Run("removed", func(t *testing.T) { check(t, "bob-laptop"+RemovedMark) })

	// pool readmit bob-laptop: the log's readmission, a later version; his
	// jobs and hours are his again, unmarked.
	if _, err := db.PutMember(ctx, store.MemberRow{ID: bobID, Name: "bob-laptop", Version: 3, AddedAt: t0, AddedBy: selfID}); err != nil {
		t.Fatal(err)
	}
	t.Run("readmitted", func(t *testing.T) { check(t, "bob-laptop") })
}
