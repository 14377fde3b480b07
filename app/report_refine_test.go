package app

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
)

// TestRefinedAgrees: coarse points standing in for finer ones give the
// figures of reading every part of the window from its finest tier, for
// jobs that start and end within steps (one still running), utilization
// that crosses idleBelow within a step or stays on one side of it, samples
// missing, and energy counters with a reset and a reading missing; and the
// refined read holds fewer points.
func TestRefinedAgrees(t *testing.T) {
	now := t0.Truncate(time.Hour).Add(7*time.Minute + 30*time.Second)
	r := windowHistory(t, now, func(g int, at time.Time) float64 {
		ago := int(now.Sub(at) / time.Second)
		switch {
		case ago > 4000 && ago < 4100:
			return -1 // the agent was down
		case g == 0:
			return float64(ago/700%3) * 40 // 0, 40, 80 in 700 s runs
		case ago/1200%3 == 0:
			return 2 + float64(ago%8) // 2 to 9: across idleBelow within any step
		case ago/1200%3 == 1:
			return 1
		}
		return 60
	})
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	js := []reportJob{
		{ID: "a", Node: alphaID, GPUs: []int{0}, Start: at(8*time.Hour + 13*time.Second), End: at(3*time.Hour + 7*time.Minute + 41*time.Second)},
		{ID: "b", Node: alphaID, GPUs: []int{0}, Start: at(2*time.Hour + 17*time.Minute + 3*time.Second), End: at(40*time.Minute + 9*time.Second)},
		{ID: "c", Node: alphaID, GPUs: []int{1}, Start: at(5*time.Hour + time.Minute + 5*time.Second)},
		{ID: "d", Node: alphaID, GPUs: []int{0, 1}, Start: at(70*time.Minute + 30*time.Second), End: at(65*time.Minute + 2*time.Second)},
	}
	for tm, mj := at(9*time.Hour-123*time.Second), uint64(1e9); tm.Before(now); tm, mj = tm.Add(15*time.Minute), mj+180e6 {
		switch ago := now.Sub(tm); {
		case ago > 6*time.Hour && ago < 6*time.Hour+15*time.Minute:
			continue // a reading missing
		case ago > 2*time.Hour && ago < 2*time.Hour+15*time.Minute:
			mj = 5e6 // the driver reloaded
		}
		er := EnergyReading{Time: tm, GPUs: []GPUEnergy{{Index: 0, MJ: mj}, {Index: 1, MJ: mj / 2}}}
		putRecord(t, r.db, alphaID, KindEnergy, history.Key(tm), tm, EncodeEnergy(er))
	}
	ctx := context.Background()
	for _, w := range []struct {
		name         string
		since, until time.Time
	}{
		{"week", at(7 * 24 * time.Hour), now},
		{"hours", at(5*time.Hour + 17*time.Second), at(23*time.Minute + 11*time.Second)},
		{"hour", at(time.Hour), now},
	} {
		report := func(refine bool) (Report, int) {
			us, err := r.counters(ctx, alphaID, w.since, w.until)
			if err != nil {
				t.Fatal(err)
			}
			var pl *refinePlan
			if refine {
				pl = newRefinePlan(js, us, w.since, w.until)
			}
			if us, _, err = r.readPoints(ctx, alphaID, us, w.since, w.until, pl); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, u := range us {
				n += len(u.Points)
			}
			return computeReport(reportInput{Since: w.since, Until: w.until, By: ReportByJob, Jobs: js, GPUs: us}), n
		}
		fine, nFine := report(false)
		got, n := report(true)
		if n >= nFine && w.name != "hour" {
			t.Errorf("%s: refined read %d points, every tier's own %d; want fewer", w.name, n, nFine)
		}
		rows := map[string]ReportRow{"": fine.Totals}
		for _, row := range fine.Rows {
			rows[row.Key] = row
		}
		for _, row := range append(got.Rows, got.Totals) {
			if want := rows[row.Key]; !nearRow(row, want) {
				t.Errorf("%s: job %q refined %+v\n from the finest tiers %+v", w.name, row.Key, row, want)
			}
		}
	}
}

// nearRow reports whether two rows agree to the rounding of a tier's
// figures (float16: a part in a thousand) and a second a job.
func nearRow(got, want ReportRow) bool {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-3*math.Max(math.Abs(a), math.Abs(b))+1.0/3600 }
	return got.Key == want.Key && got.EnergySource == want.EnergySource &&
		near(got.GPUHoursGranted, want.GPUHoursGranted) && near(got.GPUHoursUsed, want.GPUHoursUsed) &&
		near(got.IdleGrantedHours, want.IdleGrantedHours) && near(got.UnmeasuredHours, want.UnmeasuredHours) &&
		near(got.EnergyKWh, want.EnergyKWh) && near(got.EnergyTotalKWh, want.EnergyTotalKWh)
}
