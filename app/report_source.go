package app

import (
	"context"
	"encoding/json"
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

// usage reads node's per-GPU points over [since, until) from the finest
// tier whose retention covers the window, and the point before it; and its
// energy counter readings from the last before since to until.
func (r *Reader) usage(ctx context.Context, node string, since, until time.Time) ([]gpuUsage, time.Duration, error) {
	res := history.TierFor(until.Sub(since))
	pts, err := r.history.Points(ctx, node, res, since.Truncate(res.Step).Add(-res.Step), until)
	if err != nil {
		return nil, res.Step, err
	}
	out := usageOf(node, pts, res.Step)
	var readings []EnergyReading
	err = r.db.Each(ctx, node, KindEnergy, since.Add(-2*energyStep), until, func(_ time.Time, data []byte) error {
		var er EnergyReading
		if json.Unmarshal(data, &er) == nil {
			readings = append(readings, er)
		}
		return nil // a malformed reading from a peer: skip it
	})
	if err != nil {
		return nil, res.Step, err
	}
	return withCounters(out, node, readings, res.Step), res.Step, nil
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

// usageOf turns tier points into one series per GPU index. A point stands
// for the step that starts at its time, read at its last sample (one
// sampling interval, 1 s, before the step's end; a 1 s point at its own
// time), with the mean utilization and power of the samples in it, and the
// share of the step they miss.
func usageOf(node string, pts []history.Point, step time.Duration) []gpuUsage {
	byIndex := map[int]int{}
	var out []gpuUsage
	perStep := step.Seconds()
	for _, p := range pts {
		at := p.Time.Add(max(0, step-sampleInterval))
		for _, g := range p.GPUs {
			i, ok := byIndex[g.Index]
			if !ok {
				i = len(out)
				byIndex[g.Index] = i
				out = append(out, gpuUsage{Node: node, GPU: g.Index, Step: step})
			}
			out[i].Points = append(out[i].Points, usagePoint{Time: at, UtilPercent: g.M[reportUtil].Mean,
				PowerW: g.M[reportPower].Mean, Missing: min(1, max(0, 1-float64(g.N)/perStep))})
		}
	}
	return out
}

// withCounters adds the energy readings (oldest first) to the series of
// their GPU, making one for a GPU with readings but no points.
func withCounters(us []gpuUsage, node string, readings []EnergyReading, step time.Duration) []gpuUsage {
	for _, er := range readings {
		for _, g := range er.GPUs {
			i := 0
			for i < len(us) && us[i].GPU != g.Index {
				i++
			}
			if i == len(us) {
				us = append(us, gpuUsage{Node: node, GPU: g.Index, Step: step})
			}
			us[i].Counter = append(us[i].Counter, counterReading{Time: er.Time, MJ: g.MJ})
		}
	}
	return us
}
