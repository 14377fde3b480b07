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
	"github.com/labpool/labpool/sync/store"
)

// writeTiers writes node's history of GPU 0 from joined to end as the
// recorder does from the machine's first sample on: each point of each
// tier holds the 1 s samples of its period since then (the 1 s tier kept
// an hour), at util(t) percent; a 1 s sample for which missing1s is true
// is not written (a follower's catch-up leaves older ones out).
func writeTiers(t *testing.T, db *store.DB, node string, joined, end time.Time, util func(time.Time) float64, missing1s func(time.Time) bool) {
	t.Helper()
	for _, res := range history.Resolutions {
		first := latest(joined, end.Add(-res.Keep))
		for at := first.Truncate(res.Step); at.Before(end); at = at.Add(res.Step) {
			n, busy := 0, 0.0
			for s := at; s.Before(at.Add(res.Step)) && s.Before(end); s = s.Add(time.Second) {
				if s.Before(joined) {
					continue
				}
				n++
				busy += util(s)
			}
			if n == 0 || res.Kind == history.KindSample1s && missing1s != nil && missing1s(at) {
				continue
			}
			p := history.FromSample(agent.Sample{Time: at, GPUs: []gpu.Stats{{Index: 0, UtilPercent: busy / float64(n), PowerW: 100}}})
			p.N = n
			for i := range p.GPUs {
				p.GPUs[i].N = n
			}
			putRecord(t, db, node, res.Kind, history.Key(at), at, history.Encode(p))
		}
	}
}

// TestReportShortJob: a 21 s job at 100% on a machine with 1 s samples is
// measured, whatever the report's window and wherever the job falls in
// the minute, not "unmeasured".
func TestReportShortJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration // the report's
		ago    time.Duration // the job's start before the report's end
		offset time.Duration // the job's start within its second
		// gap1s: the 1 s samples from this long before the job's start
		// to 5 minutes before the end are missing (this replica caught
		// up on them, history.SkipOnCatchUp), the minutes all there.
		gap1s time.Duration
	}{
		{"an hour, 30 min ago", time.Hour, 30 * time.Minute, 0, 0},
		{"an hour, within a minute", time.Hour, 10*time.Minute + 17*time.Second, 0, 0},
		{"an hour, across a minute", time.Hour, 10*time.Minute + 50*time.Second, 0, 0},
		{"an hour, at a fraction of a second", time.Hour, 10*time.Minute + 17*time.Second, 400 * time.Millisecond, 0},
		{"an hour, just ended", time.Hour, 21 * time.Second, 0, 0},
		{"a day", 24 * time.Hour, 10*time.Minute + 17*time.Second, 0, 0},
		{"a day, hours ago", 24 * time.Hour, 5*time.Hour + 17*time.Second, 0, 0},
		{"30 days", 30 * 24 * time.Hour, 10*time.Minute + 17*time.Second, 400 * time.Millisecond, 0},
		{"an hour, seconds caught up", time.Hour, 10*time.Minute + 30*time.Second, 0, 10 * time.Second},
		{"an hour, seconds caught up, across a minute", time.Hour, 10*time.Minute + 50*time.Second, 0, 5 * time.Second},
		{"a day, seconds caught up", 24 * time.Hour, 10*time.Minute + 30*time.Second, 0, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			ctx := context.Background()
			putMember(t, db, alphaID, "alpha", false)
			mike, mikeKeyID := memberKey(4)
			putMember(t, db, mikeKeyID, "mike", false)
			end := t0.Truncate(3 * time.Hour).Add(time.Hour + 7*time.Minute + 3*time.Second)
			jobFrom := end.Add(-tc.ago).Add(tc.offset)
			jobTo := jobFrom.Add(21 * time.Second)
			writeTiers(t, db, alphaID, end.Add(-2*24*time.Hour), end, func(at time.Time) float64 {
				// The sample at s reads the second before it.
				if at.After(jobFrom) && !at.After(jobTo.Add(time.Second-1)) {
					return 100
				}
				return 0
			}, func(at time.Time) bool {
				return tc.gap1s > 0 && !at.Before(jobFrom.Add(-tc.gap1s)) && at.Before(end.Add(-5*time.Minute))
			})
			started, finished := jobFrom, jobTo
			j := proven(t, mike, mikeKeyID, alphaID, jobs.Job{Name: "short", Node: alphaID, State: jobs.Exited, GPUIndexes: []int{0},
				Started: &started, Finished: &finished})
			putRecord(t, db, alphaID, KindJob, j.ID, finished, mustJSON(t, j))

			r := NewReader(db, Self{ID: selfID, Name: "self"})
			r.now = func() time.Time { return end }
			rep, err := r.Report(ctx, ReportRequest{Since: int(tc.window.Seconds()), Until: end.Unix(), By: ReportByJob})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != 1 {
				t.Fatalf("rows %+v, want the job's", rep.Rows)
			}
			row := rep.Rows[0]
			granted := 21.0 / 3600
			// Where only minutes hold it, the job's share of a minute's
			// use is a guess: it is measured, its use at least some.
			used := granted * 0.9
			if tc.gap1s > 0 || tc.ago > time.Hour {
				used = granted * 0.1
			}
			if math.Abs(row.GPUHoursGranted-granted) > 0.5/3600 || row.UnmeasuredHours > 1.5/3600 || row.GPUHoursUsed < used {
				t.Errorf("the 21 s job at 100%%: granted %.1f s, used %.1f s, unmeasured %.1f s (samples of %d s); want 21 s granted and measured",
					row.GPUHoursGranted*3600, row.GPUHoursUsed*3600, row.UnmeasuredHours*3600, rep.StepSeconds)
			}
		})
	}
}
