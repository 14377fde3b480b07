package app

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/labpool/labpool/app/history"
)

// The known history of the report tests: a window of four hours from rt0,
// hourly readings (each stands for the hour before it).
//
//	node1 GPU 0  energy counter; util 80, 2, 100, 40 over the four hours;
//	             0.3, 0.1, 0.4, 0.2 kWh
//	node1 GPU 1  no counter: power 300, 100, 50, 50 W; util 60, 4, 0, 0
//	node2 GPU 0  counter, reset by a GPU reset in hour 2 (power 250 W then),
//	             no reading for hour 3 (the counter still spans it: 0.5 kWh
//	             over hours 3 and 4); util 10, 90, -, 70
//
// Jobs: j1 (alice) on node1 GPUs 0 and 1 from 2 h before the window to 1.5 h
// into it; j2 (bob) on node1 GPU 0 from 2 h in, still running; j3 (alice)
// on node2 GPU 0 from 1 h to 3 h in; j4 ended before the window; j5 held
// its GPU for no time.
var rt0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

const (
	node1, node2 = "NODE-1111-1111-1111", "NODE-2222-2222-2222"
	alice, bob   = "ALIC-AAAA-AAAA-AAAA", "BOBB-BBBB-BBBB-BBBB"
)

func hoursIn(h float64) time.Time { return rt0.Add(time.Duration(h * float64(time.Hour))) }

// mJ is kWh in millijoules.
func mJ(kwh float64) uint64 { return uint64(math.Round(kwh * 3.6e9)) }

func knownInput(by string) reportInput {
	counter := func(start float64, deltas ...float64) []uint64 {
		out := []uint64{mJ(start)}
		for _, d := range deltas {
			out = append(out, out[len(out)-1]+mJ(d))
		}
		return out
	}
	e1 := counter(5, 0.3, 0.1, 0.4, 0.2)
	g10 := gpuUsage{Node: node1, GPU: 0}
	for k, u := range []float64{30, 80, 2, 100, 40} {
		g10.Points = append(g10.Points, usagePoint{Time: hoursIn(float64(k)), Span: time.Hour, UtilPercent: u, PowerW: 999})
		g10.Counter = append(g10.Counter, counterReading{Time: hoursIn(float64(k)), MJ: e1[k]})
	}
	g11 := gpuUsage{Node: node1, GPU: 1}
	for k, p := range [][2]float64{{50, 700}, {60, 300}, {4, 100}, {0, 50}, {0, 50}} {
		g11.Points = append(g11.Points, usagePoint{Time: hoursIn(float64(k)), Span: time.Hour, UtilPercent: p[0], PowerW: p[1]})
	}
	g20 := gpuUsage{Node: node2, GPU: 0, Points: []usagePoint{
		{Time: hoursIn(0), Span: time.Hour, UtilPercent: 0, PowerW: 999},
		{Time: hoursIn(1), Span: time.Hour, UtilPercent: 10, PowerW: 999},
		{Time: hoursIn(2), Span: time.Hour, UtilPercent: 90, PowerW: 250}, // the counter was reset: power counts
		{Time: hoursIn(4), Span: time.Hour, UtilPercent: 70, PowerW: 999},
	}, Counter: []counterReading{
		{hoursIn(0), mJ(2)}, {hoursIn(1), mJ(2.25)}, {hoursIn(2), mJ(0.01)}, {hoursIn(4), mJ(0.51)},
	}}
	return reportInput{
		Since: rt0, Until: hoursIn(4), By: by,
		Names: map[string]string{node1: "dgx1", node2: "dgx2", alice: "alice-laptop", bob: "bob-laptop"},
		Jobs: []reportJob{
			{ID: "j1", Name: "train", Node: node1, Owner: alice, GPUs: []int{0, 1}, Start: hoursIn(-2), End: hoursIn(1.5)},
			{ID: "j2", Name: "sweep", Node: node1, Owner: bob, GPUs: []int{0}, Start: hoursIn(2)},
			{ID: "j3", Name: "eval", Node: node2, Owner: alice, GPUs: []int{0}, Start: hoursIn(1), End: hoursIn(3)},
			{ID: "j4", Name: "old", Node: node2, Owner: bob, GPUs: []int{0}, Start: hoursIn(-5), End: hoursIn(-1)},
			{ID: "j5", Name: "none", Node: node2, Owner: bob, GPUs: []int{0}, Start: hoursIn(2), End: hoursIn(2)},
		},
		GPUs: []gpuUsage{g10, g11, g20},
	}
}

func TestReportKnownHistory(t *testing.T) {
	row := func(key, label string, granted, used, idle, unmeasured, kwh, total float64, src string) ReportRow {
		return ReportRow{Key: key, Label: label, GPUHoursGranted: granted, GPUHoursUsed: used, IdleGrantedHours: idle,
			UnmeasuredHours: unmeasured, EnergyKWh: kwh, EnergyTotalKWh: total, EnergySource: src}
	}
	// j1: GPU 0 1.5 h (used 0.8 + 0.5*0.02, idle 0.5, 0.3 + 0.05 kWh),
	//     GPU 1 1.5 h (used 0.6 + 0.5*0.04, idle 0.5, 0.3 + 0.05 kWh)
	// j2: 2 h (used 1 + 0.4, 0.4 + 0.2 kWh)
	// j3: 2 h, 1 h of it unmeasured (used 0.9; 0.25 kWh by power, then a
	//     half of the counter's 0.5 kWh over hours 3 and 4)
	totals := row("", "total", 7, 3.73, 1, 1, 1.8, 2.5, EnergyMixed)
	tests := []struct {
		by   string
		want []ReportRow
	}{
		{ReportByMember, []ReportRow{
			row(alice, "alice-laptop", 5, 2.33, 1, 1, 1.2, 0, EnergyMixed),
			row(bob, "bob-laptop", 2, 1.4, 0, 0, 0.6, 0, EnergyCounter),
		}},
		{ReportByNode, []ReportRow{
			row(node1, "dgx1", 5, 2.83, 1, 0, 1.3, 1.5, EnergyMixed),
			row(node2, "dgx2", 2, 0.9, 0, 1, 0.5, 1.0, EnergyMixed),
		}},
		{ReportByGPU, []ReportRow{
			row(node1+":0", "dgx1:0", 3.5, 2.21, 0.5, 0, 0.95, 1.0, EnergyCounter),
			row(node2+":0", "dgx2:0", 2, 0.9, 0, 1, 0.5, 1.0, EnergyMixed),
			row(node1+":1", "dgx1:1", 1.5, 0.62, 0.5, 0, 0.35, 0.5, EnergyPower),
		}},
		{ReportByJob, []ReportRow{
			row("j1", "train", 3, 1.43, 1, 0, 0.7, 0, EnergyMixed),
			row("j2", "sweep", 2, 1.4, 0, 0, 0.6, 0, EnergyCounter),
			row("j3", "eval", 2, 0.9, 0, 1, 0.5, 0, EnergyMixed),
		}},
	}
	approx := cmpopts.EquateApprox(0, 1e-9)
	for _, tt := range tests {
		t.Run(tt.by, func(t *testing.T) {
			got := computeReport(knownInput(tt.by))
			want := Report{Since: rt0, Until: hoursIn(4), By: tt.by, Rows: tt.want, Totals: totals}
			if diff := cmp.Diff(want, got, approx); diff != "" {
				t.Errorf("report by %s (-want +got):\n%s", tt.by, diff)
			}
		})
	}
}

// A window that starts in the middle of a reading's hour counts the part
// of it inside the window, and a reading standing for a longer gap than its
// step counts only its step.
func TestReportPartialSpans(t *testing.T) {
	u := gpuUsage{Node: node1, GPU: 0, Points: []usagePoint{
		{Time: hoursIn(0), Span: time.Minute, UtilPercent: 100, PowerW: 100},
		{Time: hoursIn(1), Span: time.Minute, UtilPercent: 100, PowerW: 100}, // an hour later: stands for its last minute only
	}}
	m := measureSpan(&u, hoursIn(0.5), hoursIn(2))
	want := measure{granted: 1.5 * 3600, measured: 60, used: 60, powerJ: 100 * 60}
	if m != want {
		t.Errorf("measureSpan = %+v, want %+v", m, want)
	}
	// A point of a tier whose samples were half missing measures half its
	// time, and its power over that half.
	u = gpuUsage{Node: node1, GPU: 0, Points: []usagePoint{{Time: hoursIn(1), Span: time.Hour, UtilPercent: 40, PowerW: 100, Missing: 0.5}}}
	m = measureSpan(&u, hoursIn(0), hoursIn(1))
	want = measure{granted: 3600, measured: 1800, used: 720, powerJ: 100 * 1800}
	if m != want {
		t.Errorf("measureSpan of a half-missing point = %+v, want %+v", m, want)
	}
	// No series at all: everything unmeasured, no energy.
	m = measureSpan(&gpuUsage{}, hoursIn(0), hoursIn(1))
	if m != (measure{granted: 3600}) {
		t.Errorf("measureSpan of nothing = %+v, want granted only", m)
	}
}

// A running job is counted to the window's end, not beyond, and a report
// of an empty pool is all zeros with no rows.
func TestReportRunningAndEmpty(t *testing.T) {
	in := reportInput{Since: rt0, Until: hoursIn(1), By: ReportByJob,
		Jobs: []reportJob{{ID: "r", Name: "run", Node: node1, Owner: alice, GPUs: []int{0, 1, 2}, Start: hoursIn(0.75)}}}
	got := computeReport(in)
	if len(got.Rows) != 1 || math.Abs(got.Rows[0].GPUHoursGranted-0.75) > 1e-9 || math.Abs(got.Rows[0].UnmeasuredHours-0.75) > 1e-9 {
		t.Errorf("running job: %+v, want 0.75 GPU hours granted, all unmeasured", got.Rows)
	}
	empty := computeReport(reportInput{Since: rt0, Until: hoursIn(1), By: ReportByMember})
	if len(empty.Rows) != 0 || empty.Totals != (ReportRow{Label: "total"}) {
		t.Errorf("empty report: %+v", empty)
	}
}

// addPoints reads tier points as readings at their last sample, with the
// share of samples they miss.
func TestAddPoints(t *testing.T) {
	p := meanPoint{Time: rt0, Step: time.Minute, N: 45, GPUs: []history.GPUMeans{{Index: 2, N: 45, Mean: [2]float64{50, 200}}}} // 45 samples of a minute's 60
	got := addPoints(nil, node1, []meanPoint{p}, 1)
	want := []gpuUsage{{Node: node1, GPU: 2, Points: []usagePoint{
		{Time: rt0.Add(59 * time.Second), Span: time.Minute, UtilPercent: 50, PowerW: 200, Missing: 0.25}}}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(gpuUsage{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("addPoints (-want +got):\n%s", diff)
	}
}
