package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// recordSeconds records node's samples every second over [from, to), the
// value of each being its seconds since from, with n GPUs.
func recordSeconds(t *testing.T, r *history.Recorder, from, to time.Time, n int, edit func(*agent.Sample)) {
	t.Helper()
	for tm := from; tm.Before(to); tm = tm.Add(time.Second) {
		s := testSample(tm, tm.Sub(from).Seconds(), n)
		if edit != nil {
			edit(&s)
		}
		if err := r.Record(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSeries(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	rec := history.NewRecorder(db, mikeID, slog.New(slog.DiscardHandler))
	// 3 minutes from 12:10:30; GPU 1 is missing for the 12:11:10 sample
	recordSeconds(t, rec, t0.Add(-3*time.Minute), t0, 2, func(s *agent.Sample) {
		if s.Time.Equal(t0.Add(-140 * time.Second)) {
			s.GPUs = s.GPUs[:1]
		}
	})
	r := NewReader(db, Self{ID: selfID})
	r.now = func() time.Time { return t0 }
	gpu1 := 1

	host, err := r.Series(ctx, SeriesQuery{Node: mikeID, Since: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if host.Tier != "1s" || host.StepSeconds != 1 || len(host.Times) != 180 || host.GPU != nil {
		t.Fatalf("host series: tier %s step %d, %d points", host.Tier, host.StepSeconds, len(host.Times))
	}
	var names []string
	for _, m := range host.Metrics {
		names = append(names, m.Name)
	}
	if diff := cmp.Diff([]string{"cpu_percent", "mem_used_bytes", "net_rx_bps", "net_tx_bps", "disk_used_percent"}, names); diff != "" {
		t.Errorf("host metrics (-want +got):\n%s", diff)
	}
	if cpu := host.Metrics[0]; cpu.Mean[5] != 5 || cpu.Min[5] != 5 || cpu.Max[5] != 5 || cpu.Unit != "%" {
		t.Errorf("cpu at the 6th second: %v/%v/%v %s, want 5", cpu.Min[5], cpu.Mean[5], cpu.Max[5], cpu.Unit)
	}

	g, err := r.Series(ctx, SeriesQuery{Node: mikeID, GPU: &gpu1, Since: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Times) != 179 || g.Metrics[0].Name != "util_percent" || len(g.Metrics) != 7 {
		t.Fatalf("GPU 1 series: %d points (want 179: one sample lacks it), metrics %v", len(g.Times), g.Metrics[0].Name)
	}
	for _, tm := range g.Times {
		if tm == t0.Add(-140*time.Second).Unix() {
			t.Errorf("GPU 1 has a point at %d, where its sample lacked it", tm)
		}
	}

	// a day: the minutes, with the spread of each (values 0..179 over 3 minutes)
	day, err := r.Series(ctx, SeriesQuery{Node: mikeID, Since: 86400})
	if err != nil {
		t.Fatal(err)
	}
	if day.Tier != "1m" || day.StepSeconds != 60 || len(day.Times) != 4 {
		t.Fatalf("a day: tier %s, %d points: %v", day.Tier, len(day.Times), day.Times)
	}
	// 12:11 holds seconds 30..89 of the run
	if cpu := day.Metrics[0]; day.Times[1] != t0.Add(-150*time.Second).Truncate(time.Minute).Unix() ||
		cpu.Min[1] != 30 || cpu.Max[1] != 89 || cpu.Mean[1] != 59.5 {
		t.Errorf("the minute of 12:11: %v/%v/%v at %d", cpu.Min[1], cpu.Mean[1], cpu.Max[1], day.Times[1])
	}
	// the open minute so far (12:13:00 to 12:13:29: seconds 150..179), from the 1 s tier
	if cpu := day.Metrics[0]; day.Times[3] != t0.Truncate(time.Minute).Unix() || cpu.Min[3] != 150 || cpu.Max[3] != 179 || cpu.Mean[3] != 164.5 {
		t.Errorf("the open minute: %v/%v/%v at %d", cpu.Min[3], cpu.Mean[3], cpu.Max[3], day.Times[3])
	}
	// until: a window in the past
	past, err := r.Series(ctx, SeriesQuery{Node: mikeID, Since: 60, Until: t0.Add(-2 * time.Minute).Unix()})
	if err != nil || len(past.Times) != 60 || past.Times[0] != t0.Add(-3*time.Minute).Unix() {
		t.Errorf("a minute until 2 minutes ago: %d points from %v, %v", len(past.Times), past.Times, err)
	}
	b, err := json.Marshal(day)
	if err != nil || strings.Contains(string(b), "NaN") {
		t.Errorf("series JSON: %s, %v", b, err)
	}
}

func TestSeriesRefusals(t *testing.T) {
	r := NewReader(openDB(t), Self{ID: selfID})
	neg, big := -1, 256
	for _, q := range []SeriesQuery{
		{Since: 60}, {Node: mikeID}, {Node: mikeID, Since: -5}, {Node: mikeID, Since: 3 * 366 * 86400},
		{Node: mikeID, Since: 60, GPU: &neg}, {Node: mikeID, Since: 60, GPU: &big}, {Node: mikeID, Since: 60, Until: -1},
	} {
		if _, err := r.Series(context.Background(), q); !errors.Is(err, ErrInvalid) {
			t.Errorf("Series(%+v) = %v, want ErrInvalid", q, err)
		}
	}
	if _, err := r.PoolHistory(context.Background(), 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("PoolHistory(0) = %v, want ErrInvalid", err)
	}
	s, err := r.Series(context.Background(), SeriesQuery{Node: mikeID, Since: 60})
	if err != nil || s.Times == nil || len(s.Times) != 0 {
		t.Errorf("a node with no history: %+v, %v; want no points (and [] in JSON)", s, err)
	}
}

func TestPoolHistory(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	putMember(t, db, mikeID, "mike", false)
	putMember(t, db, echoID, "echo", true) // removed: not counted
	for _, id := range []string{selfID, mikeID, echoID} {
		rec := history.NewRecorder(db, id, slog.New(slog.DiscardHandler))
		recordSeconds(t, rec, t0.Add(-2*time.Second), t0, 2, func(s *agent.Sample) {
			s.GPUs[0].UtilPercent = 50 // busy
			s.GPUs[1].UtilPercent = 0  // idle but granted
			s.GPUs[1].Processes = []gpu.Process{{PID: 42}}
			s.Holding.HoldProc(42, alloc.Holder{Kind: alloc.Job, ID: "job-1"})
			if id != mikeID { // mike's: free
				s.Holding.HoldGPU(s.GPUs[1].UUID, alloc.Holder{Kind: alloc.Job, ID: "job-1"})
			}
		})
	}
	r := NewReader(db, Self{ID: selfID})
	r.now = func() time.Time { return t0 }
	ps, err := r.PoolHistory(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	want := PoolSeries{Tier: "1s", StepSeconds: 1, Times: []int64{t0.Unix() - 2, t0.Unix() - 1},
		Busy: []float64{2, 2}, IdleGranted: []float64{1, 1}, Free: []float64{1, 1}, ClusterHeld: []float64{0, 0}, ClusterFree: []float64{0, 0}}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Errorf("pool history (-want +got):\n%s", diff)
	}
}

// TestSeriesFallsBack: where the finest tier holds only the end of the
// window (a replica that caught up with the last minutes of seconds), the
// series comes from the next tier when that one reaches further back.
func TestSeriesFallsBack(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	rec := history.NewRecorder(db, mikeID, slog.New(slog.DiscardHandler))
	recordSeconds(t, rec, t0.Add(-50*time.Minute), t0, 1, nil)
	// the seconds but for the last 5 minutes go, as if never replicated
	if _, err := db.Prune(ctx, history.KindSample1s, t0.Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	r := NewReader(db, Self{ID: selfID})
	r.now = func() time.Time { return t0 }
	s, err := r.Series(ctx, SeriesQuery{Node: mikeID, Since: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tier != "1m" || len(s.Times) != 51 {
		t.Errorf("an hour with 5 minutes of seconds: tier %s, %d points; want the 51 minutes", s.Tier, len(s.Times))
	}
	// a node that started 5 minutes ago: its seconds are all there is
	db2 := openDB(t)
	recordSeconds(t, history.NewRecorder(db2, mikeID, slog.New(slog.DiscardHandler)), t0.Add(-5*time.Minute), t0, 1, nil)
	r2 := NewReader(db2, Self{ID: selfID})
	r2.now = func() time.Time { return t0 }
	if s, err := r2.Series(ctx, SeriesQuery{Node: mikeID, Since: 3600}); err != nil || s.Tier != "1s" || len(s.Times) != 300 {
		t.Errorf("a node of 5 minutes: tier %s, %d points, %v; want its 300 seconds", s.Tier, len(s.Times), err)
	}
}
