package app

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
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
	// The tiers as the recorder writes them from the machine's first
	// sample on: each point holds the 1 s samples of its period since then.
	tiers := []struct {
		kind string
		step time.Duration
	}{{history.KindSample1s, time.Second}, {history.KindSample1m, time.Minute}, {history.KindSample15m, 15 * time.Minute}, {history.KindSample3h, 3 * time.Hour}}
	for _, tier := range tiers {
		first := joined
		if tier.kind == history.KindSample1s {
			first = latest(joined, end.Add(-time.Hour)) // kept an hour
		}
		for at := first.Truncate(tier.step); at.Before(end); at = at.Add(tier.step) {
			n, busy := 0, 0.0
			for s := at; s.Before(at.Add(tier.step)) && s.Before(end); s = s.Add(time.Second) {
				if s.Before(joined) {
					continue
				}
				n++
				busy += util(s)
			}
			p := history.FromSample(agent.Sample{Time: at, GPUs: []gpu.Stats{{Index: 0, UtilPercent: busy / float64(n), PowerW: 100}}})
			p.N = n
			for i := range p.GPUs {
				p.GPUs[i].N = n
			}
			putRecord(t, db, alphaID, tier.kind, history.Key(at), at, history.Encode(p))
		}
	}
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
