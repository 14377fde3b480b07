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

// windowHistory writes alpha's history as its recorder would, every tier
// from the same 1 Hz samples (1 s for the last 65 minutes, 1 min for the
// last 3 hours, 15 min for the last 6, 3 h for the last 9, each up to its
// last closed period),
// with util giving each GPU's utilization at a second (negative: no sample).
func windowHistory(t *testing.T, now time.Time, util func(gpu int, at time.Time) float64) *Reader {
	t.Helper()
	db := openDB(t)
	putMember(t, db, alphaID, "alpha", false)
	second := func(at time.Time) (history.Point, bool) {
		s := agent.Sample{Time: at}
		for g := range 2 {
			if u := util(g, at); u >= 0 {
				s.GPUs = append(s.GPUs, gpu.Stats{Index: g, UtilPercent: u, PowerW: 100 + 2*u})
			}
		}
		return history.FromSample(s), len(s.GPUs) > 0
	}
	tier := func(kind string, step time.Duration, from time.Time) {
		for p := from.Truncate(step); p.Add(step).Before(now) || p.Add(step).Equal(now); p = p.Add(step) {
			var ps []history.Point
			for at := p; at.Before(p.Add(step)); at = at.Add(time.Second) {
				if pt, ok := second(at); ok {
					ps = append(ps, pt)
				}
			}
			if len(ps) == 0 {
				continue
			}
			pt := ps[0]
			if step > time.Second {
				pt = history.Merge(ps, p)
			}
			putRecord(t, db, alphaID, kind, history.Key(p), p, history.Encode(pt))
		}
	}
	tier(history.KindSample1s, time.Second, now.Add(-65*time.Minute))
	tier(history.KindSample1m, time.Minute, now.Add(-3*time.Hour))
	tier(history.KindSample15m, 15*time.Minute, now.Add(-6*time.Hour))
	tier(history.KindSample3h, 3*time.Hour, now.Add(-9*time.Hour))
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return now }
	return r
}

func putJob(t *testing.T, r *Reader, id, name string, gpus []int, start, end time.Time) {
	j := jobs.Job{ID: id, Name: name, Node: alphaID, Owner: mikeID, State: jobs.Running, GPUIndexes: gpus, Started: &start}
	if !end.IsZero() {
		j.State, j.Finished = jobs.Exited, &end
	}
	putRecord(t, r.db, alphaID, KindJob, j.ID, start, mustJSON(t, j))
}

// TestReportWindowsAgree: the 7-day report and the 1-hour report of one
// history give the same figures for the jobs of the last hour. GPU 0 was
// busy with an earlier job, then held by "idler": busy 10 minutes, idle 28,
// stopped for idleness 12 minutes ago (mid quarter hour); GPU 1 is held by
// "runner" for the last 20 min 17 s at 70%, with 30 s unsampled.
func TestReportWindowsAgree(t *testing.T) {
	now := t0.Truncate(time.Hour).Add(7*time.Minute + 30*time.Second)
	idleStart, idleEnd := now.Add(-50*time.Minute), now.Add(-12*time.Minute)
	runStart := now.Add(-20*time.Minute - 17*time.Second)
	gap := now.Add(-5 * time.Minute)
	r := windowHistory(t, now, func(g int, at time.Time) float64 {
		switch {
		case g == 0 && at.Before(idleStart.Add(10*time.Minute)):
			return 100 // the earlier job, then idler's first 10 minutes
		case g == 0:
			return 0
		case !at.Before(gap) && at.Before(gap.Add(30*time.Second)):
			return -1 // the agent was down
		case !at.Before(runStart):
			return 70
		}
		return 0
	})
	putJob(t, r, "job-before", "before", []int{0}, now.Add(-3*time.Hour), idleStart)
	putJob(t, r, "job-idler", "idler", []int{0}, idleStart, idleEnd)
	putJob(t, r, "job-runner", "runner", []int{1}, runStart, time.Time{})

	report := func(since int) map[string]ReportRow {
		rep, err := r.Report(context.Background(), ReportRequest{Since: since, By: ReportByJob})
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]ReportRow{}
		for _, row := range rep.Rows {
			rows[row.Key] = row
		}
		return rows
	}
	hour, week := report(3600), report(7*24*3600)
	for _, id := range []string{"job-idler", "job-runner"} {
		h, w := hour[id], week[id]
		if !approxRow(w, h) {
			t.Errorf("%s: 7-day report %+v\n 1-hour report %+v; want the same", id, w, h)
		}
	}
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol }
	sec := 1.0 / 3600
	idler := hour["job-idler"]
	if !near(idler.GPUHoursGranted, 38.0/60, 1e-9) || !near(idler.IdleGrantedHours, 28.0/60, 2*sec) ||
		!near(idler.GPUHoursUsed, 10.0/60, 2*sec) || idler.UnmeasuredHours > sec {
		t.Errorf("idler %+v; want 38 min granted, 10 used, 28 idle", idler)
	}
	runner := hour["job-runner"]
	granted := (20*60 + 17) * sec
	if !near(runner.GPUHoursGranted, granted, 1e-9) || !near(runner.UnmeasuredHours, 30*sec, 2*sec) ||
		!near(runner.GPUHoursUsed, 0.7*(granted-30*sec), 2*sec) || runner.IdleGrantedHours > sec {
		t.Errorf("runner %+v; want %.4f h granted at 70%%, 30 s unmeasured", runner, granted)
	}
	if b := week["job-before"]; !near(b.GPUHoursUsed, b.GPUHoursGranted, 2*sec) || !near(b.GPUHoursGranted, 130.0/60, 1e-9) {
		t.Errorf("before %+v in the 7-day report; want 2 h 10 min granted, all used", b)
	}
}
