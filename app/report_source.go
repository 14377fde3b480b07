package app

import (
	"context"
	"slices"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
)

// sampleInterval is the agents' sampling period (agent.DefaultConfig).
const sampleInterval = time.Second

// Indexes of the figures the report reads in a history.GPUPoint.
var (
	reportUtil  = gpuMetric("util_percent")
	reportPower = gpuMetric("power_w")
)

func gpuMetric(name string) int {
	for i, m := range history.GPUMetrics {
		if m.Name == name {
			return i
		}
	}
	panic("history keeps no GPU figure " + name)
}

// tierSpan is the part [from, to) of a report's window that tier reads:
// the finest tier that holds it.
type tierSpan struct {
	tier     int
	from, to time.Time
}

// tierSpans splits [since, until) seen at now by the finest history tier
// that holds each part, oldest first: the last hour from the 1 s tier, the
// last week from the 1 min tier, the year from the 15 min tier, older
// from the 3 h tier. Each boundary is where a finer tier starts to hold,
// rounded up to the coarser tier's step (a multiple of the finer's), so
// that each tier's points stop exactly where the next one's start. The
// first span starts a step before since (the point that reaches into it).
func tierSpans(since, until, now time.Time) []tierSpan {
	var out []tierSpan
	to := until
	n := len(history.Resolutions)
	for i := 0; i < n && to.After(since); i++ {
		from := time.Time{}
		if i < n-1 {
			coarser := history.Resolutions[i+1].Step
			from = ceilTime(now.Add(-history.Resolutions[i].Keep), coarser)
		}
		if !from.Before(to) {
			continue // this tier holds none of what is left
		}
		if !from.After(since) {
			step := history.Resolutions[i].Step
			from = since.Truncate(step).Add(-step)
		}
		out = append(out, tierSpan{tier: i, from: from, to: to})
		to = from
	}
	slices.Reverse(out)
	return out
}

// ceilTime rounds t up to a multiple of d.
func ceilTime(t time.Time, d time.Duration) time.Time {
	if r := t.Truncate(d); r.Before(t) {
		return r.Add(d)
	}
	return t
}

// usage reads node's per-GPU points over [since, until), each part as the
// finest tier that holds it gives it (tierSpans; see spanPoints where that
// tier misses the part's start, and refined for the coarser points read in
// place of finer ones), given the node's grants js, and its energy counter
// readings from the last before since to until. It returns the coarsest
// tier step it stands for.
func (r *Reader) usage(ctx context.Context, node string, js []reportJob, since, until time.Time) ([]gpuUsage, time.Duration, error) {
	us, err := r.counters(ctx, node, since, until)
	if err != nil {
		return nil, 0, err
	}
	return r.readPoints(ctx, node, us, since, until, newRefinePlan(js, us, since, until))
}

// counters reads node's energy counter readings from the last before since
// to until into a series per GPU, each sized for a reading a quarter hour.
func (r *Reader) counters(ctx context.Context, node string, since, until time.Time) ([]gpuUsage, error) {
	var us []gpuUsage
	var pairs [][2]uint64
	capacity := int(until.Sub(since)/energyStep) + 3
	err := r.db.Each(ctx, node, KindEnergy, since.Add(-2*energyStep), until, func(t time.Time, data []byte) error {
		ps, err := energyPairs(data, pairs)
		if pairs = ps; err != nil {
			return nil // a malformed reading from a peer: skip it
		}
		for _, p := range ps {
			u := series(&us, node, int(p[0]), 0)
			if u.Counter == nil {
				u.Counter = make([]counterReading, 0, capacity)
			}
			u.Counter = append(u.Counter, counterReading{Time: t, MJ: p[1]})
		}
		return nil
	})
	return us, err
}

// readPoints adds node's per-GPU points over [since, until) to us as usage
// reads them, the coarser points standing in where pl lets them (nil: none
// does).
func (r *Reader) readPoints(ctx context.Context, node string, us []gpuUsage, since, until time.Time, pl *refinePlan) ([]gpuUsage, time.Duration, error) {
	var coarsest time.Duration
	var all []tierPoints
	total := 0
	for i, sp := range tierSpans(since, until, r.now()) {
		parts, err := r.spanPoints(ctx, node, sp.tier, sp.from, sp.to, i == 0, pl)
		if err != nil {
			return nil, coarsest, err
		}
		for _, p := range parts {
			all, total = append(all, p), total+len(p.pts)
		}
	}
	for _, p := range all {
		if len(p.pts) > 0 {
			us = addPoints(us, node, p.pts, total)
			coarsest = max(coarsest, p.step)
		}
	}
	return us, coarsest, nil
}

// tierPoints are points that stand for one tier's, oldest first.
type tierPoints struct {
	pts  []meanPoint
	step time.Duration
}

// meanPoint is a tier point as the report reads it: its time and step, the
// samples it stands for, and per GPU the means of utilization and power.
type meanPoint struct {
	Time time.Time
	Step time.Duration
	N    int
	GPUs []history.GPUMeans
}

// points reads node's points of tier in [from, to), oldest first.
func (r *Reader) points(ctx context.Context, node string, tier int, from, to time.Time) ([]meanPoint, error) {
	var out []meanPoint
	res := history.Resolutions[tier]
	err := r.history.EachMeans(ctx, node, res, from, to, reportUtil, reportPower, func(tm time.Time, n int, gpus []history.GPUMeans) {
		out = append(out, meanPoint{Time: tm, Step: res.Step, N: n, GPUs: slices.Clone(gpus)})
	})
	return out, err
}

// spanPoints reads node's points of [from, to) as tier gives them (see
// refined), oldest first. Where the tier's points start late (a machine's
// 1 s history begins when its agent started, or has not caught up), the
// coarser tiers cover the start, up to the first coarser step the tier
// holds from its beginning. Points before from are read only for the
// window's first span (first), whose first point reaches into the window.
func (r *Reader) spanPoints(ctx context.Context, node string, tier int, from, to time.Time, first bool, pl *refinePlan) ([]tierPoints, error) {
	res := history.Resolutions[tier]
	start := ceilTime(from, res.Step)
	if first {
		start = from.Truncate(res.Step)
	}
	pts, err := r.refined(ctx, node, tier, start, to, pl)
	if err != nil || tier == len(history.Resolutions)-1 {
		return []tierPoints{{pts, res.Step}}, err
	}
	if len(pts) == 0 {
		return r.spanPoints(ctx, node, tier+1, from, to, first, pl)
	}
	if !pts[0].Time.After(start) {
		return []tierPoints{{pts, res.Step}}, nil
	}
	cut := ceilTime(pts[0].Time, history.Resolutions[tier+1].Step)
	before, err := r.spanPoints(ctx, node, tier+1, from, cut, first, pl)
	if err != nil || len(before) == 0 || len(before[len(before)-1].pts) == 0 {
		return []tierPoints{{pts, res.Step}}, err
	}
	before, cut = beganWith(before, pts, cut)
	if len(before) == 0 {
		return []tierPoints{{pts, res.Step}}, nil
	}
	for len(pts) > 0 && pts[0].Time.Before(cut) {
		pts = pts[1:]
	}
	return append(before, tierPoints{pts, res.Step}), nil
}

// beganWith drops the coarser point that would stand in for the start of
// pts where it holds no sample that pts do not: the machine's history
// begins with pts (it joined, or its agent first ran, within that point's
// step), so nothing is missing before them. Without this, a machine that
// joined 20 minutes into a one-hour report had its 3 h point stand in for
// the hour, its 1 s samples cut away. It returns the coarser parts left
// and where pts take over.
func beganWith(before []tierPoints, pts []meanPoint, cut time.Time) ([]tierPoints, time.Time) {
	last := &before[len(before)-1]
	lp := last.pts[len(last.pts)-1]
	stepEnd := lp.Time.Add(last.step)
	if !stepEnd.After(pts[0].Time) {
		return before, cut // it ends before pts begin: a gap, not a start
	}
	fine := 0
	for _, p := range pts {
		if !p.Time.Before(stepEnd) {
			break
		}
		fine += p.N
	}
	if lp.N > fine {
		return before, cut // it holds samples from before pts begin
	}
	last.pts = last.pts[:len(last.pts)-1]
	if len(last.pts) == 0 {
		before = before[:len(before)-1]
	}
	return before, lp.Time
}

// withLive ends each GPU's counter readings with its node's latest sample
// (by node ID), when that is newer and not after until.
func withLive(us []gpuUsage, latest map[string]agent.Sample, until time.Time) []gpuUsage {
	for i := range us {
		u := &us[i]
		live, ok := latest[u.Node]
		if !ok || live.Time.After(until) {
			continue
		}
		if n := len(u.Counter); n > 0 && !live.Time.After(u.Counter[n-1].Time) {
			continue
		}
		for _, g := range live.GPUs {
			if g.Index == u.GPU && g.EnergyMJ > 0 {
				u.Counter = append(u.Counter, counterReading{Time: live.Time, MJ: g.EnergyMJ})
			}
		}
	}
	return us
}

// addPoints adds tier points to the series of their GPU. A point stands
// for the step that starts at its time, read at its last sample (one
// sampling interval, 1 s, before the step's end; a 1 s point at its own
// time), with the mean utilization and power of the samples in it,
// and the share of the step they miss. A series it makes holds capacity
// points before it grows (all the parts of the window).
func addPoints(us []gpuUsage, node string, pts []meanPoint, capacity int) []gpuUsage {
	for _, p := range pts {
		step := p.Step
		perStep := step.Seconds()
		at := p.Time.Add(max(0, step-sampleInterval))
		for _, g := range p.GPUs {
			u := series(&us, node, g.Index, max(capacity, len(pts)))
			u.Points = append(u.Points, usagePoint{Time: at, Span: step, UtilPercent: g.Mean[0],
				PowerW: g.Mean[1], Missing: min(1, max(0, 1-float64(g.N)/perStep))})
		}
	}
	return us
}

// series is the series of GPU index in *us, added if missing; its points
// hold capacity before they grow.
func series(us *[]gpuUsage, node string, index, capacity int) *gpuUsage {
	for i := range *us {
		if u := &(*us)[i]; u.GPU == index {
			if u.Points == nil && capacity > 0 {
				u.Points = make([]usagePoint, 0, capacity)
			}
			return u
		}
	}
	*us = append(*us, gpuUsage{Node: node, GPU: index})
	return series(us, node, index, capacity)
}
