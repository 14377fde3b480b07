package app

import (
	"context"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
)

// tierStep is the time one sample of each history tier stands for.
var tierStep = map[string]time.Duration{
	history.KindSample1s:  time.Second,
	history.KindSample1m:  time.Minute,
	history.KindSample15m: 15 * time.Minute,
}

// usage reads the per-GPU samples of node over [since, until] from the
// finest tier that covers it, as the report's arithmetic takes them.
func (r *Reader) usage(ctx context.Context, node string, since, until time.Time) ([]gpuUsage, time.Duration, error) {
	window := until.Sub(since)
	step := tierStep[history.Tier(window)]
	samples, err := r.history.Window(ctx, node, window, until)
	if err != nil {
		return nil, step, err
	}
	return usageOf(node, samples, step), step, nil
}

// usageOf turns samples into one series per GPU index. A 1 s sample is a
// reading at its time; a downsampled one stands for the period that starts
// at its time, read at the period's end.
func usageOf(node string, samples []agent.Sample, step time.Duration) []gpuUsage {
	byIndex := map[int]int{}
	var out []gpuUsage
	for _, s := range samples {
		at := s.Time
		if step > time.Second {
			at = at.Add(step)
		}
		for _, g := range s.GPUs {
			i, ok := byIndex[g.Index]
			if !ok {
				i = len(out)
				byIndex[g.Index] = i
				out = append(out, gpuUsage{Node: node, GPU: g.Index, Step: step})
			}
			out[i].Points = append(out[i].Points, usagePoint{Time: at, UtilPercent: g.UtilPercent, PowerW: g.PowerW})
		}
	}
	return out
}
