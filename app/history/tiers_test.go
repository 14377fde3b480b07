package history

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/sync/store"
)

// points reads every point of kind recorded by origin, oldest first.
func tierPoints(t *testing.T, db *store.DB, origin, kind string) []Point {
	t.Helper()
	res, _ := tierOf(kind)
	pts, err := NewStore(db).Points(context.Background(), origin, res, time.Unix(0, 0), t0.Add(3*365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

// pointAt returns the point of pts at tm.
func pointAt(t *testing.T, pts []Point, tm time.Time) Point {
	t.Helper()
	for _, p := range pts {
		if p.Time.Equal(tm) {
			return p
		}
	}
	t.Fatalf("no point at %v among %d", tm, len(pts))
	return Point{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-3*max(1, math.Abs(b)) }

func checkAgg(t *testing.T, what string, got, want Agg) {
	t.Helper()
	if !near(got.Min, want.Min) || !near(got.Mean, want.Mean) || !near(got.Max, want.Max) {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

// TestTiersKeepSpikes records a sample every 5 s from 11:58 to 15:16 at
// 10% utilization but for one second at 100% (13:07:35) and one at 0%
// (14:59:55): the minute, the quarter and the 3 h points around them keep
// the extremes, and their means are those of the samples.
func TestTiersKeepSpikes(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	spike, dip := at(13, 7, 35), at(14, 59, 55)
	for tm := at(11, 58, 0); tm.Before(at(15, 16, 5)); tm = tm.Add(5 * time.Second) {
		s := testSample(tm, 10, 1)
		s.GPUs[0].UtilPercent = 10
		switch tm {
		case spike:
			s.GPUs[0].UtilPercent = 100
		case dip:
			s.GPUs[0].UtilPercent = 0
		}
		if err := r.Record(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	util := func(p Point) Agg {
		g, ok := p.GPU(0)
		if !ok {
			t.Fatalf("point at %v has no GPU 0", p.Time)
		}
		return g.M[gpuUtil]
	}
	minutes := tierPoints(t, db, selfID, KindSample1m)
	checkAgg(t, "minute 13:07", util(pointAt(t, minutes, at(13, 7, 0))), Agg{10, (11*10 + 100) / 12.0, 100})
	checkAgg(t, "minute 13:08", util(pointAt(t, minutes, at(13, 8, 0))), Agg{10, 10, 10})
	if p := pointAt(t, minutes, at(13, 7, 0)); p.N != 12 {
		t.Errorf("minute 13:07 stands for %d samples, want 12", p.N)
	}
	quarters := tierPoints(t, db, selfID, KindSample15m)
	checkAgg(t, "quarter 13:00", util(pointAt(t, quarters, at(13, 0, 0))), Agg{10, (179*10 + 100) / 180.0, 100})
	checkAgg(t, "quarter 14:45", util(pointAt(t, quarters, at(14, 45, 0))), Agg{0, (179 * 10) / 180.0, 10})
	threes := tierPoints(t, db, selfID, KindSample3h)
	if len(threes) != 2 {
		t.Fatalf("%d points of 3 h, want 09:00 (two minutes of it) and 12:00", len(threes))
	}
	checkAgg(t, "3 h from 09:00", util(threes[0]), Agg{10, 10, 10})
	if threes[0].N != 24 || !threes[0].Time.Equal(at(9, 0, 0)) {
		t.Errorf("first 3 h point at %v of %d samples, want 09:00 of 24", threes[0].Time, threes[0].N)
	}
	checkAgg(t, "3 h from 12:00", util(threes[1]), Agg{0, 10 + 80/2160.0, 100})
	if threes[1].N != 2160 {
		t.Errorf("3 h point of 12:00 stands for %d samples, want 2160", threes[1].N)
	}
	// the host's figures went through the same tiers
	checkAgg(t, "3 h CPU", threes[1].Host[hostCPU], Agg{10, 10, 10})

	// a series of 3 h points reaches the present: the open 3 h so far,
	// from the quarter 15:00, the minute 15:15 and the second 15:16:00
	series, err := NewStore(db).Series(ctx, selfID, Resolutions[3], at(9, 0, 0), at(15, 16, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 3 || !series[2].Time.Equal(at(15, 0, 0)) || series[2].N != 180+12+1 {
		t.Fatalf("3 h series: %d points, the last at %v of %d samples; want 3, the open one at 15:00 of 193", len(series), series[len(series)-1].Time, series[len(series)-1].N)
	}
	checkAgg(t, "the open 3 h", util(series[2]), Agg{10, 10, 10})
	if open, _ := NewStore(db).Series(ctx, selfID, Resolutions[1], at(15, 15, 0), at(15, 17, 0)); len(open) != 2 || open[1].N != 1 {
		t.Errorf("minute series with the open minute: %+v", open)
	}
}

// TestResume: a recorder restarted in the middle of a minute, a quarter and
// a 3 h period writes the same points as one that ran throughout.
func TestResume(t *testing.T) {
	ctx := context.Background()
	var ss []agent.Sample
	for tm := at(11, 59, 0); tm.Before(at(12, 17, 10)); tm = tm.Add(10 * time.Second) {
		ss = append(ss, testSample(tm, float64(tm.Minute()), 2))
	}
	run := func(db *store.DB, split int) {
		r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
		for i, s := range ss {
			if i == split {
				r = NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
				if err := r.Resume(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Record(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	whole, restarted := openDB(t), openDB(t)
	run(whole, -1)
	run(restarted, 50) // 12:07:20
	for _, kind := range []string{KindSample1m, KindSample15m, KindSample3h} {
		want, got := tierPoints(t, whole, selfID, kind), tierPoints(t, restarted, selfID, kind)
		if len(want) != len(got) {
			t.Fatalf("%s: %d points after a restart, %d without", kind, len(got), len(want))
		}
		for i := range want {
			if want[i].N != got[i].N || !near(want[i].Host[hostCPU].Mean, got[i].Host[hostCPU].Mean) {
				t.Errorf("%s point %v: %d samples, mean %v after a restart; want %d, %v", kind, want[i].Time,
					got[i].N, got[i].Host[hostCPU].Mean, want[i].N, want[i].Host[hostCPU].Mean)
			}
		}
	}
}

// TestOldRecords: records of the previous version (agent.Sample JSON
// means) read as points of min = mean = max, and a history without a 3 h
// tier gets one built from its 15 min points.
func TestOldRecords(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	for i := range 24 { // 6 h of quarters from 06:00
		tm := at(6, 0, 0).Add(time.Duration(i) * 15 * time.Minute)
		s := testSample(tm, float64(i), 2)
		if _, err := db.Append(ctx, selfID, KindSample15m, Key(tm), tm, mustJSON(t, s)); err != nil {
			t.Fatal(err)
		}
	}
	old := testSample(at(12, 13, 0), 42, 2)
	if _, err := db.Append(ctx, selfID, KindSample1m, Key(old.Time), old.Time, mustJSON(t, old)); err != nil {
		t.Fatal(err)
	}
	last := testSample(at(12, 13, 30), 7, 2)
	if _, err := db.Append(ctx, selfID, KindSample1s, Key(last.Time), last.Time, mustJSON(t, last)); err != nil {
		t.Fatal(err)
	}

	m := pointAt(t, tierPoints(t, db, selfID, KindSample1m), at(12, 13, 0))
	checkAgg(t, "old minute CPU", m.Host[hostCPU], Agg{42, 42, 42})
	g, _ := m.GPU(1)
	checkAgg(t, "old minute GPU 1 util", g.M[gpuUtil], Agg{43, 43, 43})
	if m.N != 60 || g.N != 60 {
		t.Errorf("an old minute stands for %d samples (GPU %d), want 60", m.N, g.N)
	}
	if s, err := Decode(mustJSON(t, old)); err != nil || s.Host.MemTotalBytes != old.Host.MemTotalBytes {
		t.Errorf("Decode(old sample) = %+v, %v", s.Host, err)
	}

	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	if err := r.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	threes := tierPoints(t, db, selfID, KindSample3h)
	if len(threes) != 2 {
		t.Fatalf("%d points of 3 h built from the old quarters, want 06:00 and 09:00", len(threes))
	}
	checkAgg(t, "3 h from 06:00 built from old quarters", threes[0].Host[hostCPU], Agg{0, 5.5, 11})
	if threes[1].N != 12*900 {
		t.Errorf("3 h point of 09:00 stands for %d samples, want %d", threes[1].N, 12*900)
	}
	if err := r.Resume(ctx); err != nil { // once only
		t.Fatal(err)
	}
	if n := len(tierPoints(t, db, selfID, KindSample3h)); n != 2 {
		t.Errorf("a second resume left %d points of 3 h, want 2", n)
	}
}

func TestPoolStates(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := testSample(at(12, 0, 0), 0, 4)
	s.GPUs[0].UtilPercent = 50 // busy
	s.GPUs[1].UtilPercent = 1  // idle but granted
	s.Holding.HoldGPU(s.GPUs[1].UUID, alloc.Holder{Kind: alloc.Job, ID: "job-1"})
	s.GPUs[2].UtilPercent, s.GPUs[2].Processes = 1, []gpu.Process{{PID: 7}} // busy: a process outside labpool
	s.GPUs[3].UtilPercent, s.GPUs[3].Processes = 0, []gpu.Process{{PID: 8}} // free: a labpool process, no grant
	s.Holding.HoldProc(8, alloc.Holder{Kind: alloc.Job, ID: "x"})
	s2 := s
	s2.Time = at(12, 0, 1)
	s2.GPUs = append([]gpu.Stats(nil), s.GPUs...)
	s2.GPUs[0].UtilPercent = 2 // free now
	for _, sm := range []agent.Sample{s, s2} {
		for _, origin := range []string{selfID, alphaID} {
			rec := record(KindSample1s, FromSample(sm))
			if _, err := db.AppendBatch(ctx, origin, []store.Record{rec}); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := NewStore(db)
	pts, err := st.Pool(ctx, []string{selfID, alphaID}, Resolutions[0], at(11, 0, 0), at(13, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []PoolPoint{{at(12, 0, 0), 4, 2, 2}, {at(12, 0, 1), 2, 2, 4}}
	if len(pts) != 2 {
		t.Fatalf("pool = %+v", pts)
	}
	for i := range want {
		if !pts[i].Time.Equal(want[i].Time) || pts[i].Busy != want[i].Busy || pts[i].IdleGranted != want[i].IdleGranted || pts[i].Free != want[i].Free {
			t.Errorf("pool point %d = %+v, want %+v", i, pts[i], want[i])
		}
	}
	// the minute of both: means over the samples
	m := Merge([]Point{FromSample(s), FromSample(s2)}, at(12, 0, 0))
	g0, _ := m.GPU(0)
	if g0.Busy != 0.5 || g0.IdleGranted != 0 {
		t.Errorf("GPU 0 over the minute: busy %v idle %v, want 0.5 and 0", g0.Busy, g0.IdleGranted)
	}
	// the minute as a record of each node; one node's old JSON mean too
	for _, origin := range []string{selfID, alphaID} {
		if _, err := db.AppendBatch(ctx, origin, []store.Record{record(KindSample1m, m)}); err != nil {
			t.Fatal(err)
		}
	}
	old := s // busy 2 (GPUs 0 and 2), idle 1, free 1
	old.Time = at(12, 0, 0)
	if _, err := db.Append(ctx, "OLD-VERSION", KindSample1m, Key(old.Time), old.Time, mustJSON(t, old)); err != nil {
		t.Fatal(err)
	}
	minutes, err := st.Pool(ctx, []string{selfID, alphaID, "OLD-VERSION"}, Resolutions[1], at(11, 0, 0), at(13, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(minutes) != 1 || minutes[0].Busy != 3+2 || minutes[0].IdleGranted != 2+1 || minutes[0].Free != 3+1 || !minutes[0].Time.Equal(at(12, 0, 0)) {
		t.Errorf("pool over the minute = %+v, want busy 5, idle 3, free 4 at 12:00", minutes)
	}
}

func TestChoose(t *testing.T) {
	now := t0
	tests := []struct {
		from, to time.Time
		want     string
	}{
		{now.Add(-time.Hour), now, "1s"},
		{now.Add(-2 * time.Hour), now, "1m"}, // the 1 s tier holds one hour
		{now.Add(-24 * time.Hour), now, "1m"},
		{now.Add(-72 * time.Hour), now.Add(-71 * time.Hour), "1m"},
		{now.Add(-7 * 24 * time.Hour), now, "15m"},
		{now.Add(-30 * 24 * time.Hour), now, "15m"},
		{now.Add(-30 * 24 * time.Hour), now.Add(-29 * 24 * time.Hour), "15m"}, // beyond the minutes' week
		{now.Add(-365 * 24 * time.Hour), now, "3h"},
		{now.Add(-400 * 24 * time.Hour), now.Add(-399 * 24 * time.Hour), "3h"},
	}
	for _, tt := range tests {
		if got := Choose(tt.from, tt.to, now); got.Name != tt.want {
			t.Errorf("Choose(%v before now, %v long) = %s, want %s", now.Sub(tt.from), tt.to.Sub(tt.from), got.Name, tt.want)
		}
	}
}
