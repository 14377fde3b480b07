package app

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// TestReportMachineJoinsLate: a one-hour report over a machine that
// joined 20 minutes into the hour reads its 1 s samples, as it does for
// any machine; it used to let the 3 h point (which holds the same samples,
// and nothing before them) stand in for the whole hour: "(samples of
// 10800s)", and its 1 s samples were cut away. A 21 s job at 100% there is
// measured from them.
func TestReportMachineJoinsLate(t *testing.T) {
	for _, after := range []time.Duration{20 * time.Minute, 59 * time.Second, -2 * time.Hour} {
		t.Run("joined "+after.String(), func(t *testing.T) { testReportJoined(t, after) })
	}
}

func testReportJoined(t *testing.T, after time.Duration) {
	db := openDB(t)
	ctx := context.Background()
	putMember(t, db, alphaID, "alpha", false)
	mike, mikeKeyID := memberKey(4)
	putMember(t, db, mikeKeyID, "mike", false)
	start := t0.Truncate(3 * time.Hour).Add(time.Hour)
	joined, end := start.Add(after), start.Add(time.Hour)
	jobFrom, jobTo := start.Add(30*time.Minute), start.Add(30*time.Minute+21*time.Second)
	util := func(at time.Time) float64 {
		if !at.Before(jobFrom) && at.Before(jobTo) {
			return 100
		}
		return 0
	}
	writeTiers(t, db, alphaID, joined, end, util, nil)
	started, finished := jobFrom, jobTo
	j := proven(t, mike, mikeKeyID, alphaID, jobs.Job{Name: "short", Node: alphaID, State: jobs.Exited, GPUIndexes: []int{0},
		Started: &started, Finished: &finished})
	putRecord(t, db, alphaID, KindJob, j.ID, finished, mustJSON(t, j))

	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return end }
	rep, err := r.Report(ctx, ReportRequest{Since: 3600, Until: end.Unix(), By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	// 1 s samples, and at most the 1 min point that reaches into the
	// window from before it (as on a machine there all along).
	if rep.StepSeconds > 60 {
		t.Errorf("a one-hour report reads samples of %d s, want 60 s at most", rep.StepSeconds)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("rows %+v, want mike's", rep.Rows)
	}
	row := rep.Rows[0]
	if want := 21.0 / 3600; math.Abs(row.GPUHoursUsed-want) > 1.5/3600 || row.UnmeasuredHours > 1.5/3600 {
		t.Errorf("the 21 s job at 100%%: used %.5f h, unmeasured %.5f h; want %.5f h used, none unmeasured",
			row.GPUHoursUsed, row.UnmeasuredHours, want)
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
