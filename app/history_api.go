package app

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/labpool/labpool/app/history"
)

// The history calls: a node's or GPU's figures over a window, and the
// pool's GPUs busy, idle but granted and free over a window.
//
//	GET /api/v1/history/series?node=ID&gpu=INDEX&since=SECONDS&until=UNIXSEC -> Series
//	GET /api/v1/history/pool?since=SECONDS -> PoolSeries

// Series is the figures of one GPU (or of the host, when GPU is nil) over
// a window, from one tier: a point stands for step_seconds of samples and
// gives the lowest, mean and highest value of each. Times with no sample
// are absent (never NaN).
type Series struct {
	Node        string   `json:"node"`
	GPU         *int     `json:"gpu"`
	Tier        string   `json:"tier"` // "1s", "1m", "15m" or "3h"
	StepSeconds int      `json:"step_seconds"`
	Times       []int64  `json:"times"` // unix seconds: the start of each point's period
	Metrics     []Metric `json:"metrics"`
}

// Metric is one figure of a Series, a value per time.
type Metric struct {
	Name string    `json:"name"` // e.g. util_percent, temp_c, cpu_percent
	Unit string    `json:"unit"` // "%", "B", "°C", "W", "MHz", "B/s"
	Min  []float64 `json:"min"`
	Mean []float64 `json:"mean"`
	Max  []float64 `json:"max"`
}

// PoolSeries counts the pool's GPUs over a window: busy (utilization of at
// least 5% or a process outside labpool), idle but granted to a job, and
// free; each a mean over the point's step.
type PoolSeries struct {
	Tier        string    `json:"tier"`
	StepSeconds int       `json:"step_seconds"`
	Times       []int64   `json:"times"`
	Busy        []float64 `json:"busy"`
	IdleGranted []float64 `json:"idle_granted"`
	Free        []float64 `json:"free"`
	// ClusterHeld and ClusterFree count the Slurm clusters' GPUs, which
	// no machine samples: held by jobs (labpool's, weighed as the report
	// weighs them, and those outside labpool the cluster's queue shows
	// running) and free, out of the GPUs the clusters' agents say they
	// have (see clusterLayers).
	ClusterHeld []float64 `json:"cluster_held"`
	ClusterFree []float64 `json:"cluster_free"`
}

// SeriesQuery asks for a Series: Since seconds before Until (unix seconds;
// 0 is now), of Node's GPU (nil: its host).
type SeriesQuery struct {
	Node  string
	GPU   *int
	Since int
	Until int64
}

// window checks since and until and returns [from, to) and now.
func (r *Reader) window(since int, until int64) (from, to, now time.Time, err error) {
	maxSince := int(history.MaxSeriesWindow / time.Second)
	if since <= 0 || since > maxSince {
		return from, to, now, fmt.Errorf("%w: since must be between 1 and %d seconds", ErrInvalid, maxSince)
	}
	now = r.now()
	to = now.Add(time.Second)
	if until > 0 {
		to = time.Unix(until, 0)
	} else if until < 0 {
		return from, to, now, fmt.Errorf("%w: until must be a unix time in seconds", ErrInvalid)
	}
	return to.Add(-time.Duration(since) * time.Second), to, now, nil
}

// Series returns the figures of a node's GPU, or of its host, over a window,
// from the tier that fits it (see history.Choose).
func (r *Reader) Series(ctx context.Context, q SeriesQuery) (Series, error) {
	if q.Node == "" {
		return Series{}, fmt.Errorf("%w: node is required", ErrInvalid)
	}
	if q.GPU != nil && (*q.GPU < 0 || *q.GPU > 255) {
		return Series{}, fmt.Errorf("%w: gpu must be an index from 0 to 255", ErrInvalid)
	}
	from, to, now, err := r.window(q.Since, q.Until)
	if err != nil {
		return Series{}, err
	}
	t := history.Choose(from, to, now)
	pts, err := r.history.Series(ctx, q.Node, t, from.Truncate(t.Step), to)
	if err != nil {
		return Series{}, fmt.Errorf("read history of %s: %w", shortID(q.Node), err)
	}
	// A tier that starts late in the window (a replica that caught up
	// with only the last minutes of seconds) gives way to the next one,
	// when that one reaches further back.
	if i := slices.Index(history.Resolutions, t); i+1 < len(history.Resolutions) && late(pts, from, to) {
		c := history.Resolutions[i+1]
		cpts, err := r.history.Series(ctx, q.Node, c, from.Truncate(c.Step), to)
		if err != nil {
			return Series{}, fmt.Errorf("read history of %s: %w", shortID(q.Node), err)
		}
		// the coarser tier holds a whole period, and a tenth of the
		// window, before the finer one starts
		if len(cpts) > 0 && (len(pts) == 0 || !cpts[0].Time.Add(c.Step).After(pts[0].Time.Add(-to.Sub(from)/10))) {
			t, pts = c, cpts
		}
	}
	return seriesOf(q, t, pts), nil
}

// late reports whether pts start more than a tenth of [from, to) after
// from.
func late(pts []history.Point, from, to time.Time) bool {
	return len(pts) == 0 || pts[0].Time.Sub(from) > to.Sub(from)/10
}

func seriesOf(q SeriesQuery, t history.Resolution, pts []history.Point) Series {
	infos := history.HostMetrics
	if q.GPU != nil {
		infos = history.GPUMetrics
	}
	s := Series{Node: q.Node, GPU: q.GPU, Tier: t.Name, StepSeconds: int(t.Step / time.Second),
		Times: make([]int64, 0, len(pts)), Metrics: make([]Metric, len(infos))}
	for i, m := range infos {
		s.Metrics[i] = Metric{Name: m.Name, Unit: m.Unit, Min: make([]float64, 0, len(pts)),
			Mean: make([]float64, 0, len(pts)), Max: make([]float64, 0, len(pts))}
	}
	for i := range pts {
		p := &pts[i]
		aggs := p.Host[:]
		if q.GPU != nil {
			g, ok := p.GPU(*q.GPU)
			if !ok {
				continue
			}
			aggs = g.M[:]
		}
		s.Times = append(s.Times, p.Time.Unix())
		for k := range s.Metrics {
			m := &s.Metrics[k]
			a := aggs[k]
			m.Min, m.Mean, m.Max = append(m.Min, finite(a.Min)), append(m.Mean, finite(a.Mean)), append(m.Max, finite(a.Max))
		}
	}
	return s
}

// finite keeps NaN and infinities, which JSON cannot carry, out of a reply.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// PoolHistory counts the pool's GPUs busy, idle but granted, and free
// over the last since seconds, from the tier that fits the window.
func (r *Reader) PoolHistory(ctx context.Context, since int) (PoolSeries, error) {
	from, to, now, err := r.window(since, 0)
	if err != nil {
		return PoolSeries{}, err
	}
	ids, _, err := r.nodeIDs(ctx)
	if err != nil {
		return PoolSeries{}, err
	}
	t := history.Choose(from, to, now)
	pts, err := r.history.Pool(ctx, ids, t, from.Truncate(t.Step), to)
	if err != nil {
		return PoolSeries{}, fmt.Errorf("read the pool's history: %w", err)
	}
	ps := PoolSeries{Tier: t.Name, StepSeconds: int(t.Step / time.Second), Times: make([]int64, len(pts)),
		Busy: make([]float64, len(pts)), IdleGranted: make([]float64, len(pts)), Free: make([]float64, len(pts))}
	for i, p := range pts {
		ps.Times[i] = p.Time.Unix()
		ps.Busy[i], ps.IdleGranted[i], ps.Free[i] = finite(p.Busy), finite(p.IdleGranted), finite(max(0, p.Free))
	}
	if ps.ClusterHeld, ps.ClusterFree, err = r.clusterLayers(ctx, ids, ps.Times, t.Step, now); err != nil {
		return PoolSeries{}, err
	}
	return ps, nil
}
