package app

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
)

// fakeReservations is a ReservationSource over fixed grants; it records
// the spans it was asked.
type fakeReservations struct {
	grants []alloc.Grant
	asked  [][2]time.Time
}

func (f *fakeReservations) Reservations(from, to time.Time) []alloc.Grant {
	f.asked = append(f.asked, [2]time.Time{from, to})
	return f.grants
}

// Reservations held but unused count, per member, apart from the hours
// their jobs held: mike reserved GPU 1 for the whole 2-hour window and his
// job used it the last hour (1 h unused); alice reserved the 3g MIG
// instance of GPU 0 for the last hour (3/7 h), and all of GPU 0 for the
// last half hour with no end and a share of 5 (counted as the whole GPU:
// 0.5 h), and a GPU no machine lists (named, not counted). A job's grant
// the source hands over is not a reservation.
func TestReportReservedUnused(t *testing.T) {
	now := t0.Truncate(time.Hour)
	r, db, js := shareReplica(t, now, jobs.Job{Name: "whole", GPUIndexes: []int{1}, GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1}})
	mikeID := js[0].Owner
	_, aliceID := memberKey(5)
	putMember(t, db, aliceID, "alice", false)
	res := func(id, member string, units []string, share float64, from, until time.Time) alloc.Grant {
		return alloc.Grant{Holder: alloc.Holder{Kind: alloc.Reservation, ID: id, Member: member, Name: id}, Units: units, Share: share, From: from, Until: until}
	}
	src := &fakeReservations{grants: []alloc.Grant{
		res("r1", mikeID, []string{"GPU-1"}, 0, now.Add(-3*time.Hour), now.Add(time.Hour)),
		res("r2", aliceID, []string{"MIG-3g"}, 0, now.Add(-time.Hour), now),
		res("r3", aliceID, []string{"GPU-0", "GPU-0"}, 5, now.Add(-30*time.Minute), time.Time{}),
		res("r4", aliceID, []string{"GPU-nope"}, 0, now.Add(-time.Hour), now),
		{Holder: alloc.Holder{Kind: alloc.Job, ID: "j", Member: mikeID}, Units: []string{"GPU-0"}, From: now.Add(-time.Hour)},
	}}
	r.reservations = src
	ctx := context.Background()
	rep, err := r.Report(ctx, ReportRequest{Since: 2 * 3600, By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{mikeID: {1, 1}, aliceID: {0, 3.0/7 + 0.5}} // granted, reserved unused
	if len(rep.Rows) != 2 {
		t.Fatalf("rows %+v, want mike's and alice's", rep.Rows)
	}
	for _, row := range rep.Rows {
		w := want[row.Key]
		if math.Abs(row.GPUHoursGranted-w[0]) > 1e-9 || math.Abs(row.ReservedUnusedHours-w[1]) > 1e-9 {
			t.Errorf("%s: %v GPU-h granted, %v reserved unused; want %v, %v", row.Label, row.GPUHoursGranted, row.ReservedUnusedHours, w[0], w[1])
		}
	}
	if math.Abs(rep.Totals.ReservedUnusedHours-(1+3.0/7+0.5)) > 1e-9 {
		t.Errorf("totals %v reserved unused", rep.Totals.ReservedUnusedHours)
	}
	if len(rep.Adjusted) != 1 || rep.Adjusted[0].Rule != RuleReservationUnit || rep.Adjusted[0].Job != "r4" {
		t.Errorf("adjusted %+v, want r4's unit named by %q", rep.Adjusted, RuleReservationUnit)
	}
	if len(src.asked) != 1 || !src.asked[0][0].Equal(now.Add(-2*time.Hour)) || !src.asked[0][1].Equal(now) {
		t.Errorf("asked %v, want the window", src.asked)
	}
	byJob, err := r.Report(ctx, ReportRequest{Since: 2 * 3600, By: ReportByJob})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, row := range byJob.Rows {
		got[row.Key] = row.ReservedUnusedHours
	}
	for key, h := range map[string]float64{"reservation:r1": 1, "reservation:r2": 3.0 / 7, "reservation:r3": 0.5, js[0].ID: 0} {
		if math.Abs(got[key]-h) > 1e-9 {
			t.Errorf("by job: %s %v reserved unused, want %v (rows %+v)", key, got[key], h, byJob.Rows)
		}
	}
}

// TestReportReservedUsedByPerson: a reservation made from one device of a
// person is used by the jobs of any of their devices: mike reserved GPU 1
// for the whole 2-hour window from his second device, and his job from his
// first used it the last hour: 1 h unused, in mike's one row.
func TestReportReservedUsedByPerson(t *testing.T) {
	now := t0.Truncate(time.Hour)
	r, db, js := shareReplica(t, now, jobs.Job{Name: "whole", GPUIndexes: []int{1}, GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1}})
	mikeID := js[0].Owner
	_, mikeWS := memberKey(43)
	putPersonDevice(t, db, mikeWS, "mike-ws", mikeID, "mike", false)
	r.reservations = &fakeReservations{grants: []alloc.Grant{{
		Holder: alloc.Holder{Kind: alloc.Reservation, ID: "r1", Member: mikeWS, Name: "r1"},
		Units:  []string{"GPU-1"}, From: now.Add(-3 * time.Hour), Until: now.Add(time.Hour)}}}
	rep, err := r.Report(context.Background(), ReportRequest{Since: 2 * 3600, By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Key != mikeID || math.Abs(rep.Rows[0].ReservedUnusedHours-1) > 1e-9 {
		t.Errorf("rows %+v; want mike's alone, 1 h reserved unused", rep.Rows)
	}
}
