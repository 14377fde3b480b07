package history

import (
	"context"
	"fmt"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// Resume takes up the periods a previous run left open, from the finer
// records it wrote (the seconds of the open minute, the minutes of the open
// quarter, the quarters of the open 3 h), so a restart loses no part of a
// coarse point. It also writes, once, the 3 h tier of a history recorded
// before that tier existed, from its 15 min points.
func (r *Recorder) Resume(ctx context.Context) error {
	last, ok, err := r.db.Newest(ctx, r.origin, KindSample1s)
	if err != nil || !ok {
		return err
	}
	t := last.Time
	for level := range r.open {
		up := Resolutions[level+1]
		from := t.Truncate(up.Step)
		to := t.Add(time.Second)
		if level > 0 {
			to = t.Truncate(Resolutions[level].Step)
		}
		pts, err := r.points(ctx, Resolutions[level].Kind, from, to)
		if err != nil {
			return err
		}
		r.open[level] = period{start: from, pts: pts}
	}
	return r.build3h(ctx, t.Truncate(Resolutions[3].Step))
}

func (r *Recorder) points(ctx context.Context, kind string, from, to time.Time) ([]Point, error) {
	var pts []Point
	err := r.db.Each(ctx, r.origin, kind, from, to, func(_ time.Time, data []byte) error {
		if p, err := DecodePoint(kind, data); err == nil {
			pts = append(pts, p)
		}
		return nil
	})
	return pts, err
}

// build3h writes the 3 h points before end from the 15 min tier when this
// origin has no 3 h point yet (a history from before the 3 h tier).
func (r *Recorder) build3h(ctx context.Context, end time.Time) error {
	_, ok, err := r.db.Newest(ctx, r.origin, KindSample3h)
	if err != nil || ok {
		return err
	}
	quarters, err := r.points(ctx, KindSample15m, end.Add(-Resolutions[3].Keep), end)
	if err != nil {
		return err
	}
	var recs []store.Record
	for len(quarters) > 0 {
		start := quarters[0].Time.Truncate(Resolutions[3].Step)
		n := 1
		for n < len(quarters) && quarters[n].Time.Truncate(Resolutions[3].Step).Equal(start) {
			n++
		}
		recs = append(recs, record(KindSample3h, Merge(quarters[:n], start)))
		quarters = quarters[n:]
	}
	for len(recs) > 0 {
		n := min(len(recs), 500)
		if _, err := r.db.AppendBatch(ctx, r.origin, recs[:n]); err != nil {
			return fmt.Errorf("write the 3 h tier: %w", err)
		}
		recs = recs[n:]
	}
	return nil
}
