package history

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/sync/store"
)

// at is the time hh:mm:ss on t0's day.
func at(hh, mm, ss int) time.Time {
	return time.Date(t0.Year(), t0.Month(), t0.Day(), hh, mm, ss, 0, time.UTC)
}

// seconds returns one sample a second over [from, to], the value of each
// being its seconds since from.
func seconds(from, to time.Time) []agent.Sample {
	var ss []agent.Sample
	for tm := from; !tm.After(to); tm = tm.Add(time.Second) {
		ss = append(ss, testSample(tm, tm.Sub(from).Seconds(), 2))
	}
	return ss
}

// tier reads every sample of kind recorded by origin, oldest first.
func tier(t *testing.T, db *store.DB, origin, kind string) []agent.Sample {
	t.Helper()
	recs, err := db.Range(context.Background(), origin, kind, time.Unix(0, 0), t0.Add(365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var out []agent.Sample
	for _, r := range recs {
		s, err := Decode(r.Data)
		if err != nil {
			t.Fatalf("%s/%s: %v", kind, r.Key, err)
		}
		if r.Key != Key(s.Time) || !r.Time.Equal(s.Time) {
			t.Errorf("%s record key %q time %v holds a sample of %v", kind, r.Key, r.Time, s.Time)
		}
		out = append(out, s)
	}
	return out
}

// point is a mean the tests check: its period start and CPU percent.
type meanPoint struct {
	Time time.Time
	CPU  float64
}

func points(ss []agent.Sample) []meanPoint {
	out := []meanPoint{}
	for _, s := range ss {
		out = append(out, meanPoint{s.Time, s.Host.CPUPercent})
	}
	return out
}

func TestRecorderTiers(t *testing.T) {
	tests := []struct {
		name        string
		samples     []agent.Sample
		minutes     []meanPoint
		quarters    []meanPoint
		wantSeconds int
	}{
		{
			name:    "within one minute",
			samples: seconds(at(12, 13, 30), at(12, 13, 59)),
			minutes: []meanPoint{}, quarters: []meanPoint{}, wantSeconds: 30,
		},
		{
			name:    "steady 1 Hz across a quarter hour",
			samples: seconds(at(12, 13, 30), at(12, 16, 5)),
			// means of 0..29, 30..89, 90..149; the quarter: the mean of the
			// 90 seconds of its first two minutes (weighted by samples)
			minutes:     []meanPoint{{at(12, 13, 0), 14.5}, {at(12, 14, 0), 59.5}, {at(12, 15, 0), 119.5}},
			quarters:    []meanPoint{{at(12, 0, 0), 44.5}},
			wantSeconds: 156,
		},
		{
			name: "a gap of half an hour",
			samples: []agent.Sample{
				testSample(at(12, 13, 30), 1, 2), testSample(at(12, 13, 31), 3, 2),
				testSample(at(12, 47, 10), 10, 2), testSample(at(12, 48, 0), 20, 2),
			},
			minutes:     []meanPoint{{at(12, 13, 0), 2}, {at(12, 47, 0), 10}},
			quarters:    []meanPoint{{at(12, 0, 0), 2}},
			wantSeconds: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
			for _, s := range tt.samples {
				if err := r.Record(context.Background(), s); err != nil {
					t.Fatalf("Record(%v): %v", s.Time, err)
				}
			}
			if n := len(tier(t, db, selfID, KindSample1s)); n != tt.wantSeconds {
				t.Errorf("%d records of %s, want %d", n, KindSample1s, tt.wantSeconds)
			}
			if diff := cmp.Diff(tt.minutes, points(tier(t, db, selfID, KindSample1m))); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", KindSample1m, diff)
			}
			if diff := cmp.Diff(tt.quarters, points(tier(t, db, selfID, KindSample15m))); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", KindSample15m, diff)
			}
		})
	}
}

func TestRecorderMeanFigures(t *testing.T) {
	db := openDB(t)
	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	for _, s := range seconds(at(12, 14, 0), at(12, 15, 0)) {
		if err := r.Record(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	ms := tier(t, db, selfID, KindSample1m)
	if len(ms) != 1 {
		t.Fatalf("%d minute means, want 1", len(ms))
	}
	m := ms[0] // the mean of values 0..59: 29.5
	// a tier keeps figures, not totals or names
	if m.Host.CPUPercent != 29.5 || m.Host.MemUsedBytes != 29_500 || m.Host.NetRxBps != 59 || m.Host.NetTxBps != 88.5 {
		t.Errorf("host mean = %+v", m.Host)
	}
	if len(m.GPUs) != 2 {
		t.Fatalf("mean has %d GPUs, want 2", len(m.GPUs))
	}
	g := m.GPUs[1]
	if g.UtilPercent != 30.5 || g.MemUtilPercent != 14.75 || g.TempC != 69.5 || g.PowerW != 129.5 ||
		g.MemUsedBytes != 2950 || g.Index != 1 {
		t.Errorf("GPU 1 mean = %+v", g)
	}
}

func TestRecorderPrune(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	tiers := []struct {
		kind       string
		kept, gone []time.Duration // ages at the prune
	}{
		{KindSample1s, []time.Duration{time.Second, 59 * time.Minute}, []time.Duration{61 * time.Minute, 3 * time.Hour}},
		{KindSample1m, []time.Duration{time.Hour, 6 * 24 * time.Hour}, []time.Duration{8 * 24 * time.Hour}},
		{KindSample15m, []time.Duration{300 * 24 * time.Hour, 365 * 24 * time.Hour}, []time.Duration{367 * 24 * time.Hour}},
		{KindSample3h, []time.Duration{700 * 24 * time.Hour}, []time.Duration{733 * 24 * time.Hour}},
	}
	for _, tr := range tiers {
		for _, age := range append(append([]time.Duration{}, tr.kept...), tr.gone...) {
			putSample(t, db, alphaID, tr.kind, testSample(t0.Add(-age), 1, 0)) // a peer's
			s := testSample(t0.Add(-age), 1, 0)
			if _, err := db.Append(ctx, selfID, tr.kind, Key(s.Time), s.Time, mustJSON(t, s)); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.prune(ctx, t0)
	for _, tr := range tiers {
		for _, origin := range []string{selfID, alphaID} {
			var ages []time.Duration
			for _, s := range tier(t, db, origin, tr.kind) {
				ages = append(ages, t0.Sub(s.Time))
			}
			want := append([]time.Duration(nil), tr.kept...)
			for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
				want[i], want[j] = want[j], want[i] // oldest first
			}
			if diff := cmp.Diff(want, ages); diff != "" {
				t.Errorf("%s of %s after prune (-want +got ages):\n%s", tr.kind, origin, diff)
			}
		}
	}
}

func TestRecorderRun(t *testing.T) {
	db := openDB(t)
	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	ss := seconds(at(12, 13, 58), at(12, 14, 1))
	ch := make(chan agent.Sample, len(ss))
	for _, s := range ss {
		ch <- s
	}
	close(ch)
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), ch) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when its samples channel closed")
	}
	if n := len(tier(t, db, selfID, KindSample1s)); n != len(ss) {
		t.Errorf("%d samples recorded, want %d", n, len(ss))
	}
	if got := points(tier(t, db, selfID, KindSample1m)); len(got) != 1 || got[0] != (meanPoint{at(12, 13, 0), 0.5}) {
		t.Errorf("minute means = %v, want the 12:13 mean", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- r.Run(ctx, make(chan agent.Sample)) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return when its context was cancelled")
	}
}

// TestRecorderLive: the full sample is written when what it says beyond the
// figures changes, or LiveEvery after the last; the figures go into the
// 1 s record every second, and Latest joins the two.
func TestRecorderLive(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	liveTimes := func() time.Time {
		rec, ok, err := db.Newest(ctx, selfID, KindLive)
		if err != nil || !ok {
			t.Fatalf("no live record: %v", err)
		}
		return rec.Time
	}
	steps := []struct {
		at       time.Time
		edit     func(*agent.Sample)
		wantLive time.Time
	}{
		{at(12, 0, 0), nil, at(12, 0, 0)},
		{at(12, 0, 1), nil, at(12, 0, 0)}, // figures only
		{at(12, 0, 2), func(s *agent.Sample) { s.Holding.HoldGPU(s.GPUs[1].UUID, alloc.Holder{Kind: alloc.Job, ID: "job-1"}) }, at(12, 0, 2)},
		{at(12, 0, 3), func(s *agent.Sample) {
			s.Holding.HoldGPU(s.GPUs[1].UUID, alloc.Holder{Kind: alloc.Job, ID: "job-1"})
			s.Host.Load1 = 99
		}, at(12, 0, 2)},
		{at(12, 0, 32), func(s *agent.Sample) { s.Holding.HoldGPU(s.GPUs[1].UUID, alloc.Holder{Kind: alloc.Job, ID: "job-1"}) }, at(12, 0, 32)}, // LiveEvery
		{at(12, 0, 33), func(s *agent.Sample) { s.GPUs = s.GPUs[:1] }, at(12, 0, 33)},
	}
	for _, st := range steps {
		s := testSample(st.at, float64(st.at.Second()), 2)
		if st.edit != nil {
			st.edit(&s)
		}
		if err := r.Record(ctx, s); err != nil {
			t.Fatal(err)
		}
		if got := liveTimes(); !got.Equal(st.wantLive) {
			t.Errorf("after the sample of %v the live record is of %v, want %v", st.at.Format("15:04:05"), got.Format("15:04:05"), st.wantLive.Format("15:04:05"))
		}
		latest, err := NewStore(db).Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l := latest[selfID]
		if !l.Time.Equal(st.at) || l.Host.CPUPercent != float64(st.at.Second()) || l.GPUs[0].UUID != "GPU-a" || l.Host.MemTotalBytes != 100_000 {
			t.Errorf("Latest after %v = %+v", st.at.Format("15:04:05"), l)
		}
	}
}
