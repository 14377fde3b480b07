package history

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

func TestTier(t *testing.T) {
	tests := []struct {
		window time.Duration
		want   string
	}{
		{time.Second, KindSample1s},
		{time.Hour, KindSample1s},
		{time.Hour + time.Second, KindSample1m},
		{7 * 24 * time.Hour, KindSample1m},
		{7*24*time.Hour + time.Second, KindSample15m},
		{MaxWindow, KindSample15m},
	}
	for _, tt := range tests {
		if got := Tier(tt.window); got != tt.want {
			t.Errorf("Tier(%v) = %s, want %s", tt.window, got, tt.want)
		}
	}
}

func TestStoreLatest(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	putSample(t, db, selfID, KindSample1s, testSample(t0.Add(-time.Second), 1, 0))
	putSample(t, db, selfID, KindSample1s, testSample(t0, 2, 0))
	putSample(t, db, alphaID, KindSample1m, testSample(t0, 3, 0)) // a mean is not the latest sample
	got, err := NewStore(db).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[selfID].Host.CPUPercent != 2 {
		t.Errorf("Latest = %v, want the newest 1 s sample of self only", got)
	}
}

// TestStoreLatestLiveOrNewer: the live record is the latest sample, unless a
// newer 1 s record arrived (a replica catching up gets the live one last):
// then that one's figures, with the live record's names and totals.
func TestStoreLatestLiveOrNewer(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	if err := r.Record(ctx, testSample(t0, 5, 2)); err != nil {
		t.Fatal(err)
	}
	got, err := NewStore(db).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := got[selfID]; !s.Time.Equal(t0) || s.GPUs[1].UUID != "GPU-b" || s.Host.MemTotalBytes != 100_000 {
		t.Errorf("Latest = %+v, want the live sample", s)
	}
	newer := testSample(t0.Add(time.Second), 9, 2)
	if _, err := db.Append(ctx, selfID, KindSample1s, Key(newer.Time), newer.Time, Encode(FromSample(newer))); err != nil {
		t.Fatal(err)
	}
	got, err = NewStore(db).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := got[selfID]
	if !s.Time.Equal(newer.Time) || s.Host.CPUPercent != 9 || s.GPUs[1].UtilPercent != 10 || s.GPUs[1].UUID != "GPU-b" ||
		s.GPUs[1].MemTotalBytes != 10_000 || s.Host.MemTotalBytes != 100_000 {
		t.Errorf("Latest = %+v, want the newer 1 s figures with the live record's names and totals", s)
	}
}

// TestStoreLatestKeepsHolding: a newer 1 s record (figures only) takes
// who holds the GPUs and their processes from the live record, as it
// takes its processes: the machine view names the job's process.
func TestStoreLatestKeepsHolding(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	s := testSample(t0, 5, 2)
	s.GPUs[1].Processes = []gpu.Process{{PID: 42, MemBytes: 1 << 30}}
	job := alloc.Holder{Kind: alloc.Job, ID: "job-1", Member: "alice"}
	s.Holding.HoldGPU(s.GPUs[1].UUID, job)
	s.Holding.HoldProc(42, job)
	if err := r.Record(ctx, s); err != nil {
		t.Fatal(err)
	}
	newer := testSample(t0.Add(time.Second), 9, 2)
	if _, err := db.Append(ctx, selfID, KindSample1s, Key(newer.Time), newer.Time, Encode(FromSample(newer))); err != nil {
		t.Fatal(err)
	}
	got, err := NewStore(db).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := got[selfID]
	if !l.Time.Equal(newer.Time) || l.Holding.GPU("GPU-b") != job || l.Holding.Proc(42) != job {
		t.Errorf("Latest at %v holds %+v; want the newer figures with the live record's holding", l.Time, l.Holding)
	}
}
