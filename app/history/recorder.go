package history

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/sync/store"
)

// Recorder writes this machine's samples into the replica: the latest in
// full, every one at 1 s, and each coarser tier's point as its period
// closes; it prunes each tier to its retention.
type Recorder struct {
	db     *store.DB
	origin string
	log    *slog.Logger

	// liveAt and liveShape are the time and shape of the last live record.
	liveAt    time.Time
	liveShape string

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
	agent.Consume(ctx, samples, time.Minute, func(s agent.Sample) {
		if err := r.Record(ctx, s); err != nil {
			r.log.Warn("record sample", "err", err)
		}
	}, func(now time.Time) { r.prune(ctx, now) })
	return nil
}

// LiveEvery is how often the live record is rewritten when nothing but
// figures changed: the 1 s record carries those every second, and a
// viewer stores one record a second per machine instead of two.
const LiveEvery = 30 * time.Second

// Record writes one sample, and the points of the periods it closes, in
// one transaction; and the full sample (KindLive) when what it says beyond
// the figures changed (GPUs, processes, health, jobs, disks, errors) or
// LiveEvery passed.
func (r *Recorder) Record(ctx context.Context, s agent.Sample) error {
	p := FromSample(s)
	recs := []store.Record{record(KindSample1s, p)}
	recs = r.fold(0, p, recs)
	shape := shapeOf(s)
	writeLive := shape != r.liveShape || s.Time.Sub(r.liveAt) >= LiveEvery || s.Time.Before(r.liveAt)
	if writeLive {
		live, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("encode sample: %w", err)
		}
		recs = append(recs, store.Record{Kind: KindLive, Time: s.Time, Data: live})
	}
	if _, err := r.db.AppendBatch(ctx, r.origin, recs); err != nil {
		return err
	}
	if writeLive {
		r.liveAt, r.liveShape = s.Time, shape
	}
	return nil
}

// shapeOf is what s says beyond the figures a 1 s record keeps, but for
// what drifts or flaps with the load (load averages, energy, used disk and
// process memory, fan, performance state, throttle reasons), which
// LiveEvery refreshes.
func shapeOf(s agent.Sample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|", s.GPUError, s.Host.MemTotalBytes)
	for _, d := range s.Host.Disks {
		fmt.Fprintf(&b, "%s:%d,", d.Mount, d.TotalBytes)
	}
	for _, g := range s.GPUs {
		fmt.Fprintf(&b, "|%d %s %s %d %v %s %s %d %d %v %s %s", g.Index, g.UUID, g.Name, g.MemTotalBytes, g.PowerLimitW,
			g.Health, g.HealthReason, g.XIDErrors, g.ECCUncorrected, g.RetiredPending, holderShape(s.Holding.GPU(g.UUID)), g.Error)
		for _, pr := range g.Processes {
			fmt.Fprintf(&b, " %d/%s", pr.PID, holderShape(s.Holding.Proc(pr.PID)))
		}
	}
	return b.String()
}

// holderShape is h in shapeOf: its kind, IDs and member.
func holderShape(h alloc.Holder) string {
	if !h.Held() {
		return ""
	}
	return string(h.Kind) + ":" + h.ID + ":" + h.Job + ":" + h.Member
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
