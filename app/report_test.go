package app

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// TestReaderReport computes a report from a replica: alpha's GPUs over 70
// minutes of 1 min points (GPU 0 at 100% and 300 W, GPU 1 idle at 50 W),
// GPU 0's energy counter read at 0, 15, 30 and 45 minutes (0.1, 0.1 and
// 0.05 kWh between), a job of mike's holding both for the first 30 minutes
// (removed since: it still counts), and a record of bad's claiming to be a
// job of alpha's.
func TestReaderReport(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	putMember(t, db, alphaID, "alpha", false)
	mike, mikeKeyID := memberKey(4)
	putMember(t, db, mikeKeyID, "mike", false)
	putMember(t, db, badID, "bad", false)
	start := t0.Truncate(time.Minute)
	for m := start.Add(-10 * time.Minute); m.Before(start.Add(time.Hour)); m = m.Add(time.Minute) {
		p := history.FromSample(agent.Sample{Time: m, GPUs: []gpu.Stats{{Index: 0, UtilPercent: 100, PowerW: 300}, {Index: 1, PowerW: 50}}})
		p.N = 60
		for i := range p.GPUs {
			p.GPUs[i].N = 60
		}
		putRecord(t, db, alphaID, history.KindSample1m, history.Key(m), m, history.Encode(p))
	}
	for i, kwh := range []float64{1, 1.1, 1.2, 1.25} {
		at := start.Add(time.Duration(i) * 15 * time.Minute)
		er := EnergyReading{Time: at, GPUs: []GPUEnergy{{Index: 0, MJ: uint64(kwh * 3.6e9)}}}
		putRecord(t, db, alphaID, KindEnergy, history.Key(at), at, EncodeEnergy(er))
	}
	started, finished := start, start.Add(30*time.Minute)
	j := proven(t, mike, mikeKeyID, alphaID, jobs.Job{Name: "train", Node: alphaID, State: jobs.Exited, GPUIndexes: []int{0, 1},
		Started: &started, Finished: &finished, Removed: true, Spec: jobs.Spec{Env: []string{"TOKEN=s3cret"}}})
	putRecord(t, db, alphaID, KindJob, j.ID, finished, mustJSON(t, j))
	forged := j
	forged.ID, forged.Owner = "job-forged", badID
	putRecord(t, db, badID, KindJob, forged.ID, finished, mustJSON(t, forged))

	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return start.Add(time.Hour) }
	until := start.Add(time.Hour).Unix()
	rep, err := r.Report(ctx, ReportRequest{Since: 7200, Until: until, By: ReportByMember})
	if err != nil {
		t.Fatal(err)
	}
	// GPU 0 by its counter (0.2 kWh), GPU 1 by power (50 W for 0.5 h).
	want := ReportRow{Key: mikeKeyID, Label: "mike", GPUHoursGranted: 1, GPUHoursUsed: 0.5, IdleGrantedHours: 0.5,
		EnergyKWh: 0.225, EnergySource: EnergyMixed}
	if len(rep.Rows) != 1 || !approxRow(rep.Rows[0], want) || rep.StepSeconds != 60 {
		t.Errorf("rows %+v (step %d), want [%+v] at 60 s", rep.Rows, rep.StepSeconds, want)
	}
	// GPU 0: 0.25 kWh counted, 300 W for the 25 minutes before and after
	// the readings; GPU 1: 50 W for 70 minutes.
	all := 0.25 + 0.3*25/60 + 0.05*70/60
	if math.Abs(rep.Totals.EnergyTotalKWh-all) > 1e-9 || rep.Totals.GPUHoursGranted != 1 {
		t.Errorf("totals %+v, want 1 GPU hour and %.6f kWh in all", rep.Totals, all)
	}
	b, _ := json.Marshal(rep)
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "TOKEN") {
		t.Errorf("the report shows a job's environment: %s", b)
	}

	byNode, err := r.Report(ctx, ReportRequest{Since: 7200, Until: until, By: ReportByNode})
	if err != nil || len(byNode.Rows) != 1 || byNode.Rows[0].Label != "alpha" || math.Abs(byNode.Rows[0].EnergyTotalKWh-all) > 1e-9 {
		t.Errorf("by node: %+v, %v", byNode.Rows, err)
	}
	// The latest full sample ends the counter's readings: GPU 0 is counted
	// to the window's end (its power before the first reading: 10 min and
	// the second the first point, read at its last sample, reaches back).
	end := start.Add(time.Hour)
	putRecord(t, db, alphaID, history.KindLive, "", end, mustJSON(t, agent.Sample{Time: end,
		GPUs: []gpu.Stats{{Index: 0, EnergyMJ: uint64(1.30 * 3.6e9)}, {Index: 1}}}))
	byNode, err = r.Report(ctx, ReportRequest{Since: 7200, Until: until, By: ReportByNode})
	all = 0.30 + 0.3*601/3600 + 0.05*70/60
	if err != nil || len(byNode.Rows) != 1 || math.Abs(byNode.Rows[0].EnergyTotalKWh-all) > 1e-9 {
		t.Errorf("by node with the live sample: %+v, %v; want %.6f kWh in all", byNode.Rows, err, all)
	}
	for _, bad := range []ReportRequest{{Since: 60, By: "team"}, {Since: 0, By: "job"}, {Since: 60, Until: -1, By: "job"}} {
		if _, err := r.Report(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Report(%+v) = %v, want %v", bad, err, ErrInvalid)
		}
	}
}

func approxRow(got, want ReportRow) bool {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	return got.Key == want.Key && got.Label == want.Label && got.EnergySource == want.EnergySource &&
		near(got.GPUHoursGranted, want.GPUHoursGranted) && near(got.GPUHoursUsed, want.GPUHoursUsed) &&
		near(got.IdleGrantedHours, want.IdleGrantedHours) && near(got.UnmeasuredHours, want.UnmeasuredHours) &&
		near(got.EnergyKWh, want.EnergyKWh) && near(got.EnergyTotalKWh, want.EnergyTotalKWh)
}

// A report over a day reads 15 min points, and the quarter hour not closed
// yet from the 1 min tier, and the minute not closed yet from the 1 s tier:
// a running job at 100% for the last hour is all used but the last second
// (no sample yet).
func TestReaderReportOpenPeriods(t *testing.T) {
	db := openDB(t)
	putMember(t, db, alphaID, "alpha", false)
	now := t0.Truncate(time.Hour).Add(7*time.Minute + 30*time.Second)
	put := func(kind string, step time.Duration, from, to time.Time) {
		for tm := from; tm.Before(to); tm = tm.Add(step) {
			p := history.FromSample(agent.Sample{Time: tm, GPUs: []gpu.Stats{{Index: 0, UtilPercent: 100, PowerW: 100}}})
			p.N = int(step / time.Second)
			p.GPUs[0].N = p.N
			putRecord(t, db, alphaID, kind, history.Key(tm), tm, history.Encode(p))
		}
	}
	quarter, minute := now.Truncate(15*time.Minute), now.Truncate(time.Minute)
	put(history.KindSample15m, 15*time.Minute, now.Add(-25*time.Hour).Truncate(15*time.Minute), quarter)
	put(history.KindSample1m, time.Minute, now.Add(-2*time.Hour).Truncate(time.Minute), minute)
	put(history.KindSample1s, time.Second, minute.Add(-10*time.Minute), now)
	started := now.Add(-time.Hour)
	j := jobs.Job{ID: "job-1", Name: "train", Node: alphaID, Owner: alphaID, State: jobs.Running, GPUIndexes: []int{0}, Started: &started}
	putRecord(t, db, alphaID, KindJob, j.ID, started, mustJSON(t, j))

	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return now }
	rep, err := r.Report(context.Background(), ReportRequest{Since: 24 * 3600, By: ReportByJob})
	if err != nil {
		t.Fatal(err)
	}
	want := ReportRow{Key: "job-1", Label: "train", GPUHoursGranted: 1, GPUHoursUsed: 3599.0 / 3600, UnmeasuredHours: 1.0 / 3600,
		EnergyKWh: 0.1 * 3599 / 3600, EnergySource: EnergyPower}
	if len(rep.Rows) != 1 || !approxRow(rep.Rows[0], want) || rep.StepSeconds != 900 {
		t.Errorf("rows %+v (step %d), want [%+v] at 900 s", rep.Rows, rep.StepSeconds, want)
	}
}

// A running job of a machine not heard from for a while counts to the
// machine's last sample, not to now.
func TestReaderReportSilentNode(t *testing.T) {
	db := openDB(t)
	putMember(t, db, alphaID, "alpha", false)
	now := t0.Truncate(time.Hour)
	last := now.Add(-2 * time.Hour)
	putRecord(t, db, alphaID, history.KindLive, "", last, mustJSON(t, agent.Sample{Time: last, GPUs: []gpu.Stats{{Index: 0}}}))
	started := now.Add(-3 * time.Hour)
	j := jobs.Job{ID: "job-1", Name: "train", Node: alphaID, Owner: alphaID, State: jobs.Running, GPUIndexes: []int{0, 1}, Started: &started}
	putRecord(t, db, alphaID, KindJob, j.ID, started, mustJSON(t, j))
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return now }
	rep, err := r.Report(context.Background(), ReportRequest{Since: 24 * 3600, By: ReportByJob})
	if err != nil || len(rep.Rows) != 1 || math.Abs(rep.Rows[0].GPUHoursGranted-2) > 1e-9 {
		t.Errorf("report %+v, %v; want the job's 2 GPUs for the hour before alpha went silent", rep.Rows, err)
	}
}
