package alerting

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/pool"
)

// TestRemovedMachineForgetsOldPool: a machine watches ws-a100, a GPU
// machine of its pool, go offline and raises machine-offline about it.
// Then it learns it was removed from the pool (its log says so): at its
// next evaluation the alert about ws-a100 is cleared (the record says
// so), and over the minutes after it raises nothing about the old pool's
// machines, though ws-a100 stays out of reach. Restarted with the alert
// left firing, it clears it at once too.
func TestRemovedMachineForgetsOldPool(t *testing.T) {
	self, ws, laptop := id("self"), id("ws-a100"), id("bob-laptop")
	ctx := context.Background()
	for _, restart := range []bool{false, true} {
		name := "learns"
		if restart {
			name = "restarted"
		}
		t.Run(name, func(t *testing.T) {
			db := replicatest.Open(t)
			writeNode(t, db, self, 2)
			writeNode(t, db, ws, 8)
			writeNode(t, db, laptop, 1)
			members := []pool.MemberState{{ID: self.String(), Name: "self"}, {ID: ws.String(), Name: "ws-a100"},
				{ID: laptop.String(), Name: "bob-laptop"}}
			p := fakePool{members: members}
			nobody := online{} // ws-a100 and the laptop are out of reach throughout
			openAt := func() (*Alerting, *Inputs) {
				in := NewInputs(self.String(), db, func() map[string]string { return nil }, nil, p, nobody)
				return Open(ctx, Config{Self: self, Name: "self"}, db, p, in, discard), in
			}
			a, in := openAt()
			start := time.Now().Add(-time.Hour).Truncate(time.Second)
			at := start
			step := func(d time.Duration) {
				at = at.Add(d)
				a.Machine().Eval.Evaluate(alerts.Reading{Time: at, Peers: in.Peers()})
			}
			for range 7 {
				step(10 * time.Second)
			}
			if n := aboutOthers(a.Machine().Eval.Active(), self.String()); n != 2 {
				t.Fatalf("before the removal: %d machine-offline alerts active, want 2 (ws-a100, the laptop)", n)
			}

			members[0].Removed = true // this machine's log now says it was removed
			if restart {
				a, in = openAt()
			}
			step(time.Second)
			if n := aboutOthers(a.Machine().Eval.Active(), self.String()); n != 0 {
				t.Errorf("after learning it was removed: %d alerts about the old pool's machines still active", n)
			}
			for range 60 {
				step(10 * time.Second)
			}
			if n := aboutOthers(a.Machine().Eval.Active(), self.String()); n != 0 {
				t.Errorf("10 minutes later: %d alerts about the old pool's machines active", n)
			}
			// The records say the same: each alert about another machine
			// is cleared, and none fired after the removal.
			recs, err := db.Range(ctx, self.String(), app.KindAlert, time.Time{}, at.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			latest := map[string]alerts.Alert{}
			for _, rec := range recs {
				var al alerts.Alert
				if json.Unmarshal(rec.Data, &al) == nil {
					latest[al.ID] = al
				}
			}
			for _, al := range latest {
				if al.Node == self.String() {
					continue
				}
				if al.Active() || al.FiredAt.After(start.Add(70*time.Second)) {
					t.Errorf("alert %s about %s: active %v, fired at +%v; want cleared, fired before the removal",
						al.ID, al.Node, al.Active(), al.FiredAt.Sub(start))
				}
			}
			if len(latest) != 2 {
				t.Errorf("%d alerts recorded; want the 2 raised before the removal", len(latest))
			}
		})
	}
}

// aboutOthers counts the alerts in as about machines other than self.
func aboutOthers(as []alerts.Alert, self string) int {
	n := 0
	for _, a := range as {
		if a.Node != self {
			n++
		}
	}
	return n
}

// TestJobNamesRemovedOwner: an idle-allocation alert about a job of a
// member removed since names them, marked "(removed)"; a device the pool
// never admitted gets no name (the message shows a short ID).
func TestJobNamesRemovedOwner(t *testing.T) {
	db := replicatest.Open(t)
	self, bob, stranger := id("self"), id("bob-laptop"), id("stranger")
	p := fakePool{members: []pool.MemberState{{ID: self.String(), Name: "self"}, {ID: bob.String(), Name: "bob-laptop", Removed: true}}}
	in := NewInputs(self.String(), db, func() map[string]string { return nil }, nil, p, online{})
	owners := map[string]string{"job-1": bob.String(), "job-2": stranger.String()}
	in.SetJobs(func(id string) (jobs.Job, error) { return jobs.Job{ID: id, Name: "train", Owner: owners[id]}, nil })
	for job, want := range map[string]string{"job-1": "bob-laptop" + app.RemovedMark, "job-2": ""} {
		if _, owner := in.JobNames(job); owner != want {
			t.Errorf("JobNames(%s) owner %q, want %q", job, owner, want)
		}
	}
}

// TestJobNamesPerson: an alert names who launched a job by their person,
// whichever device they launched it from: alice for her laptop's job, bob
// for a job of his device removed since while he stays in the pool, and
// carol, marked "(removed)", once no device of hers is left.
func TestJobNamesPerson(t *testing.T) {
	db := replicatest.Open(t)
	self, dgx, laptop, bobWS, bobLaptop, carol := id("self"), id("dgx"), id("alice-laptop"), id("bob-ws"), id("bob-laptop"), id("carol")
	p := fakePool{members: []pool.MemberState{
		{ID: self.String(), Name: "self", Person: self.String(), PersonName: "self"},
		{ID: dgx.String(), Name: "dgx", Person: dgx.String(), PersonName: "alice"},
		{ID: laptop.String(), Name: "alice-laptop", Person: dgx.String(), PersonName: "alice"},
		{ID: bobWS.String(), Name: "bob-ws", Person: bobWS.String(), PersonName: "bob"},
		{ID: bobLaptop.String(), Name: "bob-laptop", Person: bobWS.String(), PersonName: "bob", Removed: true},
		{ID: carol.String(), Name: "carol-laptop", Person: carol.String(), PersonName: "carol", Removed: true},
	}}
	in := NewInputs(self.String(), db, func() map[string]string { return nil }, nil, p, online{})
	owners := map[string]string{"job-1": laptop.String(), "job-2": bobLaptop.String(), "job-3": carol.String()}
	in.SetJobs(func(id string) (jobs.Job, error) { return jobs.Job{ID: id, Name: "train", Owner: owners[id]}, nil })
	for job, want := range map[string]string{"job-1": "alice", "job-2": "bob", "job-3": "carol" + app.RemovedMark} {
		if _, owner := in.JobNames(job); owner != want {
			t.Errorf("JobNames(%s) owner %q, want %q", job, owner, want)
		}
	}
}
