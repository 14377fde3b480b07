package history

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// Recorder writes this machine's samples into the replica: the latest in
// full, every one at 1 s, and each coarser tier's point as its period
// closes; it prunes each tier to its retention.
type Recorder struct {
	db     *store.DB
	origin string
	log    *slog.Logger

	// open[i] holds the points of the open period of Resolutions[i+1], from
	// Resolutions[i]: the seconds of the minute, the minutes of the quarter, the
	// quarters of the 3 h.
	open [3]period
}

type period struct {
	start time.Time
	pts   []Point
}

// NewRecorder returns a recorder writing as origin.
func NewRecorder(db *store.DB, origin string, log *slog.Logger) *Recorder {
	return &Recorder{db: db, origin: origin, log: log}
}

// Run records every sample from samples until ctx is cancelled. It first
// takes up the periods a previous run left open (see Resume).
func (r *Recorder) Run(ctx context.Context, samples <-chan agent.Sample) error {
	if err := r.Resume(ctx); err != nil {
		r.log.Warn("resume history", "err", err)
	}
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case s, ok := <-samples:
			if !ok {
				return nil
			}
			if err := r.Record(ctx, s); err != nil {
				r.log.Warn("record sample", "err", err)
			}
		case now := <-prune.C:
			r.prune(ctx, now)
		}
	}
}

// Record writes one sample, and the points of the periods it closes, in
// one transaction.
func (r *Recorder) Record(ctx context.Context, s agent.Sample) error {
	live, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode sample: %w", err)
	}
	p := FromSample(s)
	recs := []store.Record{record(KindSample1s, p)}
	recs = r.fold(0, p, recs)
	recs = append(recs, store.Record{Kind: KindLive, Time: s.Time, Data: live})
	_, err = r.db.AppendBatch(ctx, r.origin, recs)
	return err
}

func record(kind string, p Point) store.Record {
	return store.Record{Kind: kind, Key: Key(p.Time), Time: p.Time, Data: Encode(p)}
}

// fold adds p, a point of Resolutions[level], to the open period of the tier
// above, first closing that period when p is outside it; closing appends
// its record to out and folds it further up.
func (r *Recorder) fold(level int, p Point, out []store.Record) []store.Record {
	if level >= len(r.open) {
		return out
	}
	up := Resolutions[level+1]
	o := &r.open[level]
	start := p.Time.Truncate(up.Step)
	if len(o.pts) > 0 && !o.start.Equal(start) {
		m := Merge(o.pts, o.start)
		o.pts = o.pts[:0]
		out = append(out, record(up.Kind, m))
		out = r.fold(level+1, m, out)
	}
	o.start = start
	o.pts = append(o.pts, p)
	return out
}

func (r *Recorder) prune(ctx context.Context, now time.Time) {
	for _, t := range Resolutions {
		if _, err := r.db.Prune(ctx, t.Kind, now.Add(-t.Keep)); err != nil {
			r.log.Warn("prune samples", "kind", t.Kind, "err", err)
		}
	}
}
