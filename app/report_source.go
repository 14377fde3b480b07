package app

import (
	"context"
	"time"

	"github.com/labpool/labpool/app/history"
)

// Indexes of the figures the report reads in a history.GPUPoint; energy is
// -1 while the tiers keep no energy counter (the report then integrates
// power).
var (
	reportUtil   = gpuMetric("util_percent")
	reportPower  = gpuMetric("power_w")
	reportEnergy = gpuMetric("energy_mj")
)

func gpuMetric(name string) int {
	for i, m := range history.GPUMetrics {
		if m.Name == name {
			return i
		}
	}
	return -1
}

// usage reads node's per-GPU points over [since, until) from the finest
// tier whose retention covers the window, and the point before since (so
// that an energy counter has a reading to start from).
func (r *Reader) usage(ctx context.Context, node string, since, until time.Time) ([]gpuUsage, time.Duration, error) {
	res := history.TierFor(until.Sub(since))
	pts, err := r.history.Points(ctx, node, res, since.Truncate(res.Step).Add(-res.Step), until)
	if err != nil {
		return nil, res.Step, err
	}
	return usageOf(node, pts, res.Step), res.Step, nil
}

// usageOf turns tier points into one series per GPU index. A point stands
// for the step that starts at its time: a reading at the step's end, with
// the mean utilization and power of the samples in it, the share of the
// step they miss (a 1 s sample per second is none), and the energy
// counter's highest value (its last reading).
func usageOf(node string, pts []history.Point, step time.Duration) []gpuUsage {
	byIndex := map[int]int{}
	var out []gpuUsage
	perStep := step.Seconds()
	for _, p := range pts {
		at := p.Time.Add(step)
		for _, g := range p.GPUs {
			i, ok := byIndex[g.Index]
			if !ok {
				i = len(out)
				byIndex[g.Index] = i
				out = append(out, gpuUsage{Node: node, GPU: g.Index, Step: step})
			}
			u := usagePoint{Time: at, UtilPercent: g.M[reportUtil].Mean, PowerW: g.M[reportPower].Mean,
				Missing: min(1, max(0, 1-float64(g.N)/perStep))}
			if reportEnergy >= 0 && g.M[reportEnergy].Max > 0 {
				u.EnergyMJ = uint64(g.M[reportEnergy].Max)
			}
			out[i].Points = append(out[i].Points, u)
		}
	}
	return out
}
