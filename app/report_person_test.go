package app

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// putPersonDevice adds device id, named name, to the member table as a
// device of person (the device ID of their first device), named pname.
func putPersonDevice(t *testing.T, db *store.DB, id, name, person, pname string, removed bool) {
	t.Helper()
	m := store.MemberRow{ID: id, Name: name, Version: 1, Removed: removed, AddedAt: t0, AddedBy: selfID, Person: person, PersonName: pname}
	if _, err := db.PutMember(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// TestReportByPerson: alice launched jobs from her dgx and her laptop
// (removed since: alice stays in the pool), bob from his laptop before he
// left. By member, a row is a person, the sum of their devices, keyed by
// the person's ID: alice with both her devices' hours, bob marked
// removed. By device, each device is a row of its own, named with its
// person. The totals are the same either way.
func TestReportByPerson(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}})
	dgxKey, dgx := memberKey(31)
	lapKey, lap := memberKey(32)
	bobKey, bob := memberKey(33)
	putPersonDevice(t, db, dgx, "dgx", dgx, "alice", false)
	putPersonDevice(t, db, lap, "alice-laptop", dgx, "alice", true)
	putPersonDevice(t, db, bob, "bob-laptop", bob, "bob", true)

	end := t0
	for i, l := range []struct {
		key   jobs.LaunchSigner
		owner string
		hours float64
	}{{dgxKey, dgx, 1}, {lapKey, lap, 2}, {bobKey, bob, 0.5}} {
		started := end.Add(-3 * time.Hour)
		finished := started.Add(time.Duration(l.hours * float64(time.Hour)))
		j := proven(t, l.key, l.owner, alphaID, jobs.Job{Name: "train", Node: alphaID, State: jobs.Exited,
			GPUIndexes: []int{i}, Started: &started, Finished: &finished, Created: started, Spec: jobs.Spec{Image: "img", GPUs: 1}})
		putRecord(t, db, alphaID, KindJob, j.ID, finished, mustJSON(t, j))
	}
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return end }
	type row struct {
		Key, Label string
		Hours      float64
	}
	tests := []struct {
		by   string
		want []row
	}{
		{ReportByMember, []row{{dgx, "alice", 3}, {bob, "bob" + RemovedMark, 0.5}}},
		{ReportByDevice, []row{{lap, "alice (alice-laptop)", 2}, {dgx, "alice (dgx)", 1}, {bob, "bob (bob-laptop, removed)", 0.5}}},
	}
	for _, tt := range tests {
		rep, err := r.Report(ctx, ReportRequest{Since: 4 * 3600, Until: end.Unix(), By: tt.by})
		if err != nil {
			t.Fatal(err)
		}
		var got []row
		for _, r := range rep.Rows {
			got = append(got, row{r.Key, r.Label, r.GPUHoursGranted})
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("report by %s (-want +got):\n%s", tt.by, diff)
		}
		if rep.Totals.GPUHoursGranted != 3.5 {
			t.Errorf("report by %s: %v GPU-h in all; want 3.5", tt.by, rep.Totals.GPUHoursGranted)
		}
	}
}
