package app

import (
	"context"
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

// reportPoints is how many points per node a report reads at most (where
// a tier that fine holds the window): a report of 16 machines stays well
// under a second.
const reportPoints = 1000

// reportTier is the finest tier that gives at most reportPoints points
// over [since, until) and still holds since; else the coarsest.
func reportTier(since, until, now time.Time) int {
	for i, t := range history.Resolutions {
		if until.Sub(since)/t.Step <= reportPoints && !since.Before(now.Add(-t.Keep-t.Step)) {
			return i
		}
	}
	return len(history.Resolutions) - 1
}

// usage reads node's per-GPU points over [since, until) from reportTier's
// tier, from the point before since, then the periods that tier has not
// closed yet from each finer tier in turn (the last hours of a 3 h tier
// from the 15 min one, and so on down to 1 s); and its energy counter
// readings from the last before since to until. It returns the step of
// the main tier.
func (r *Reader) usage(ctx context.Context, node string, since, until time.Time) ([]gpuUsage, time.Duration, error) {
	now := r.now()
	tier := reportTier(since, until, now)
	main := history.Resolutions[tier].Step
	var out []gpuUsage
	from := since.Truncate(main).Add(-main)
	for i := tier; i >= 0 && from.Before(until); i-- {
		res := history.Resolutions[i]
		if from.Before(now.Add(-res.Keep - res.Step)) {
			continue // this finer tier no longer holds from
		}
		pts, err := r.history.Points(ctx, node, res, from, until)
		if err != nil {
			return nil, main, err
		}
		out = addPoints(out, node, pts, res.Step)
		if n := len(pts); n > 0 {
			from = pts[n-1].Time.Add(res.Step)
		}
	}
	var readings []EnergyReading
	err := r.db.Each(ctx, node, KindEnergy, since.Add(-2*energyStep), until, func(t time.Time, data []byte) error {
		if er, err := DecodeEnergy(t, data); err == nil {
			readings = append(readings, er)
		}
		return nil // a malformed reading from a peer: skip it
	})
	if err != nil {
		return nil, main, err
	}
	return withCounters(out, node, readings), main, nil
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

// addPoints adds tier points (of one step) to the series of their GPU. A
// point stands for the step that starts at its time, read at its last
// sample (one sampling interval, 1 s, before the step's end; a 1 s point at
// its own time), with the mean utilization and power of the samples in it,
// and the share of the step they miss.
func addPoints(us []gpuUsage, node string, pts []history.Point, step time.Duration) []gpuUsage {
	perStep := step.Seconds()
	for _, p := range pts {
		at := p.Time.Add(max(0, step-sampleInterval))
		for _, g := range p.GPUs {
			u := series(&us, node, g.Index, len(pts))
			u.Points = append(u.Points, usagePoint{Time: at, Span: step, UtilPercent: g.M[reportUtil].Mean,
				PowerW: g.M[reportPower].Mean, Missing: min(1, max(0, 1-float64(g.N)/perStep))})
		}
	}
	return us
}

// series is the series of GPU index in *us, added if missing.
func series(us *[]gpuUsage, node string, index, capacity int) *gpuUsage {
	for i := range *us {
		if (*us)[i].GPU == index {
			return &(*us)[i]
		}
	}
	*us = append(*us, gpuUsage{Node: node, GPU: index, Points: make([]usagePoint, 0, capacity)})
	return &(*us)[len(*us)-1]
}

// withCounters adds the energy readings (oldest first) to the series of
// their GPU, making one for a GPU with readings but no points.
func withCounters(us []gpuUsage, node string, readings []EnergyReading) []gpuUsage {
	for _, er := range readings {
		for _, g := range er.GPUs {
			u := series(&us, node, g.Index, 0)
			u.Counter = append(u.Counter, counterReading{Time: er.Time, MJ: g.MJ})
		}
	}
	return us
}
