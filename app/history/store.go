package history

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// Store answers queries about the samples in the replica.
type Store struct {
	db *store.DB
}

// NewStore returns the queries over db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Latest returns the newest sample of every node that has one: its live
// record, or its newest 1 s record when that is newer (a node of an older
// version, or a replica catching up, where the live record comes last),
// with the totals and names of the live one. A malformed record from a peer
// is left out, as if the node sent none.
func (s *Store) Latest(ctx context.Context) (map[string]agent.Sample, error) {
	live, err := s.db.LatestByKind(ctx, KindLive)
	if err != nil {
		return nil, fmt.Errorf("read latest samples: %w", err)
	}
	seconds, err := s.db.LatestByKind(ctx, KindSample1s)
	if err != nil {
		return nil, fmt.Errorf("read latest samples: %w", err)
	}
	m := make(map[string]agent.Sample, len(live))
	for _, r := range live {
		if sm, err := Decode(r.Data); err == nil {
			m[r.Origin] = sm
		}
	}
	for _, r := range seconds {
		full, ok := m[r.Origin]
		if ok && !r.Time.After(full.Time) {
			continue
		}
		sm, err := Decode(r.Data)
		if err != nil {
			continue
		}
		if ok {
			sm = withDetails(sm, full)
		}
		m[r.Origin] = sm
	}
	return m, nil
}

// Choose returns the tier of a series over [from, to) seen at now: the
// finest that still holds from and gives at most maxPoints points.
func Choose(from, to, now time.Time) Resolution {
	for _, t := range Resolutions {
		if to.Sub(from)/t.Step <= maxPoints && !from.Before(now.Add(-t.Keep-t.Step)) {
			return t
		}
	}
	return Resolutions[len(Resolutions)-1]
}

// Points returns node's points of tier t whose time is in [from, to),
// oldest first. Malformed records are skipped.
func (s *Store) Points(ctx context.Context, node string, t Resolution, from, to time.Time) ([]Point, error) {
	var out []Point
	err := s.db.Each(ctx, node, t.Kind, from, to, func(_ time.Time, data []byte) error {
		if p, err := DecodePoint(t.Kind, data); err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Series returns node's points of tier t over [from, to), oldest first,
// and when to is past the last closed point, the open period's point so
// far (built from the finer tiers: the quarters, minutes and seconds the
// recorder has written of it), so a chart reaches the present.
func (s *Store) Series(ctx context.Context, node string, t Resolution, from, to time.Time) ([]Point, error) {
	pts, err := s.Points(ctx, node, t, from, to)
	if err != nil || t.Step == time.Second {
		return pts, err
	}
	start := from
	if len(pts) > 0 {
		start = pts[len(pts)-1].Time.Add(t.Step)
	}
	if !start.Before(to) {
		return pts, nil
	}
	level := slices.IndexFunc(Resolutions, func(r Resolution) bool { return r.Kind == t.Kind })
	open, err := s.tail(ctx, node, level, start, to)
	if err != nil || len(open) == 0 {
		return pts, err
	}
	// the open points, one per period of t
	for len(open) > 0 {
		p0 := open[0].Time.Truncate(t.Step)
		n := 1
		for n < len(open) && open[n].Time.Truncate(t.Step).Equal(p0) {
			n++
		}
		pts = append(pts, Merge(open[:n], p0))
		open = open[n:]
	}
	return pts, nil
}

// tail returns the points of the finer tiers that cover [start, to) where
// tier level has none yet: the closed points of the tier below, then what
// the tiers below it hold after those.
func (s *Store) tail(ctx context.Context, node string, level int, start, to time.Time) ([]Point, error) {
	if level <= 0 {
		return nil, nil
	}
	finer := Resolutions[level-1]
	pts, err := s.Points(ctx, node, finer, start, to)
	if err != nil {
		return nil, err
	}
	next := start
	if len(pts) > 0 {
		next = pts[len(pts)-1].Time.Add(finer.Step)
	}
	if next.Before(to) && level-1 > 0 {
		more, err := s.tail(ctx, node, level-1, next, to)
		if err != nil {
			return nil, err
		}
		pts = append(pts, more...)
	}
	return pts, nil
}

// TierFor is the finest tier whose retention covers window (the History
// call's choice, which prefers detail to few points).
func TierFor(window time.Duration) Resolution {
	for _, t := range Resolutions[:len(Resolutions)-1] {
		if window <= t.Keep {
			return t
		}
	}
	return Resolutions[len(Resolutions)-1]
}

// Window returns node's samples (means) of the window that ends at now,
// oldest first, from TierFor(window). Malformed records are skipped.
func (s *Store) Window(ctx context.Context, node string, window time.Duration, now time.Time) ([]agent.Sample, error) {
	pts, err := s.Points(ctx, node, TierFor(window), now.Add(-window), now.Add(time.Minute))
	if err != nil {
		return nil, err
	}
	live, _ := s.live(ctx, node)
	out := make([]agent.Sample, len(pts))
	for i, p := range pts {
		out[i] = withTotals(p.Sample(), live)
	}
	return out, nil
}

// live returns node's latest full sample: totals and names, which tiers
// do not keep.
func (s *Store) live(ctx context.Context, node string) (agent.Sample, bool) {
	for _, kind := range []string{KindLive, KindSample1s} {
		r, ok, err := s.db.Newest(ctx, node, kind)
		if err != nil || !ok {
			continue
		}
		if sm, err := Decode(r.Data); err == nil {
			return sm, true
		}
	}
	return agent.Sample{}, false
}

// withDetails gives s, a sample of figures only, what live says beyond
// them: totals, names, processes and who holds them, health, the GPU
// error.
func withDetails(s, live agent.Sample) agent.Sample {
	if len(s.GPUs) > 0 && s.GPUs[0].UUID != "" {
		return s // a full sample (an older version's 1 s record)
	}
	s.GPUError, s.Holding = live.GPUError, live.Holding
	s.Host.Load1, s.Host.Load5, s.Host.Load15 = live.Host.Load1, live.Host.Load5, live.Host.Load15
	s.Host.Disks = live.Host.Disks
	s = withTotals(s, live)
	for i := range s.GPUs {
		for _, g := range live.GPUs {
			if g.Index == s.GPUs[i].Index {
				fig := s.GPUs[i]
				s.GPUs[i] = g
				s.GPUs[i].UtilPercent, s.GPUs[i].MemUtilPercent, s.GPUs[i].MemUsedBytes = fig.UtilPercent, fig.MemUtilPercent, fig.MemUsedBytes
				s.GPUs[i].TempC, s.GPUs[i].PowerW, s.GPUs[i].SMClockMHz, s.GPUs[i].MemClockMHz = fig.TempC, fig.PowerW, fig.SMClockMHz, fig.MemClockMHz
			}
		}
	}
	return s
}

// withTotals gives s the memory totals and GPU names of live.
func withTotals(s, live agent.Sample) agent.Sample {
	s.Host.MemTotalBytes = live.Host.MemTotalBytes
	for i := range s.GPUs {
		for _, g := range live.GPUs {
			if g.Index == s.GPUs[i].Index {
				s.GPUs[i].MemTotalBytes, s.GPUs[i].UUID, s.GPUs[i].Name = g.MemTotalBytes, g.UUID, g.Name
			}
		}
	}
	return s
}

// PoolPoint counts the pool's GPUs at one time: busy, idle but granted,
// and free (means over the point's period).
type PoolPoint struct {
	Time                    time.Time
	Busy, IdleGranted, Free float64
}

// Pool sums the GPU states of nodes over [from, to) in tier t, by time,
// oldest first.
func (s *Store) Pool(ctx context.Context, nodes []string, t Resolution, from, to time.Time) ([]PoolPoint, error) {
	step := int64(t.Step / time.Second)
	first := from.Truncate(t.Step).Unix()
	n := int((to.Unix()-first)/step) + 1
	sums := make([]PoolPoint, n)
	seen := make([]bool, n)
	var buf []byte
	for _, node := range nodes {
		err := s.db.Each(ctx, node, t.Kind, from, to, func(_ time.Time, data []byte) error {
			var pp *PoolPoint
			at := func(tm time.Time) bool {
				i := (tm.Unix() - first) / step
				if i < 0 || i >= int64(n) {
					return false
				}
				pp, seen[i] = &sums[i], true
				return true
			}
			// a malformed record from a peer counts as none (GPUs read
			// before the fault count: a torn record cannot come from a
			// store, which keeps whole records)
			gpuStates(t.Kind, data, &buf, at, func(share, busy, idle float64) {
				pp.Busy += busy * share
				pp.IdleGranted += idle * share
				pp.Free += (1 - busy - idle) * share
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]PoolPoint, 0, n)
	for i := range sums {
		if seen[i] {
			p := sums[i]
			p.Time = time.Unix(first+int64(i)*step, 0).UTC()
			out = append(out, p)
		}
	}
	return out, nil
}

// Tier is the kind of the finest tier whose retention covers window.
func Tier(window time.Duration) string { return TierFor(window).Kind }
