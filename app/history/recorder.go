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

// Recorder writes this machine's samples into the replica at 1 s, and the
// downsampled tiers (1 min, 15 min) as each period closes, pruning each tier
// to its retention.
type Recorder struct {
	db     *store.DB
	origin string
	log    *slog.Logger

	minute  []agent.Sample // the samples of the open minute
	quarter []agent.Sample // the 1 min means of the open quarter hour
}

// NewRecorder returns a recorder writing as origin.
func NewRecorder(db *store.DB, origin string, log *slog.Logger) *Recorder {
	return &Recorder{db: db, origin: origin, log: log}
}

// Run records every sample from samples until ctx is cancelled.
func (r *Recorder) Run(ctx context.Context, samples <-chan agent.Sample) error {
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

// Record writes one sample, closing the minute and quarter it ends.
func (r *Recorder) Record(ctx context.Context, s agent.Sample) error {
	if n := len(r.minute); n > 0 && !sameBucket(r.minute[n-1].Time, s.Time, time.Minute) {
		if err := r.closeMinute(ctx); err != nil {
			return err
		}
	}
	r.minute = append(r.minute, s)
	return r.append(ctx, KindSample1s, s)
}

func (r *Recorder) closeMinute(ctx context.Context) error {
	m := MeanSample(r.minute, time.Minute)
	r.minute = r.minute[:0]
	if n := len(r.quarter); n > 0 && !sameBucket(r.quarter[n-1].Time, m.Time, 15*time.Minute) {
		q := MeanSample(r.quarter, 15*time.Minute)
		r.quarter = r.quarter[:0]
		if err := r.append(ctx, KindSample15m, q); err != nil {
			return err
		}
	}
	r.quarter = append(r.quarter, m)
	return r.append(ctx, KindSample1m, m)
}

func (r *Recorder) append(ctx context.Context, kind string, s agent.Sample) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode sample: %w", err)
	}
	_, err = r.db.Append(ctx, r.origin, kind, Key(s.Time), s.Time, data)
	return err
}

func (r *Recorder) prune(ctx context.Context, now time.Time) {
	for kind, keep := range retention {
		if _, err := r.db.Prune(ctx, kind, now.Add(-keep)); err != nil {
			r.log.Warn("prune samples", "kind", kind, "err", err)
		}
	}
}

func sameBucket(a, b time.Time, d time.Duration) bool {
	return a.Truncate(d).Equal(b.Truncate(d))
}

// MeanSample averages samples into one point at the start of their period d.
// Figures that are not rates (totals, names) come from the last sample.
func MeanSample(ss []agent.Sample, d time.Duration) agent.Sample {
	last := ss[len(ss)-1]
	m := last
	m.Time = last.Time.Truncate(d)
	m.GPUs = append(m.GPUs[:0:0], last.GPUs...)
	n := float64(len(ss))
	var cpu, load, rx, tx float64
	var mem uint64
	for _, s := range ss {
		cpu += s.Host.CPUPercent
		load += s.Host.Load1
		rx += s.Host.NetRxBps
		tx += s.Host.NetTxBps
		mem += s.Host.MemUsedBytes
	}
	m.Host.CPUPercent, m.Host.Load1 = cpu/n, load/n
	m.Host.NetRxBps, m.Host.NetTxBps = rx/n, tx/n
	m.Host.MemUsedBytes = mem / uint64(len(ss))
	for i := range m.GPUs {
		var util, memUtil, temp, power float64
		var used uint64
		for _, s := range ss {
			if i >= len(s.GPUs) {
				continue
			}
			g := s.GPUs[i]
			util += g.UtilPercent
			memUtil += g.MemUtilPercent
			temp += g.TempC
			power += g.PowerW
			used += g.MemUsedBytes
		}
		g := &m.GPUs[i]
		g.UtilPercent, g.MemUtilPercent, g.TempC, g.PowerW = util/n, memUtil/n, temp/n, power/n
		g.MemUsedBytes = used / uint64(len(ss))
	}
	return m
}
