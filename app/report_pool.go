package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// The pool's GPUs over time count the Slurm clusters' GPUs too: the
// machines' GPUs come from their samples (busy, idle but granted, free);
// a cluster's from its agent, which samples none, as held (by labpool's
// jobs there, weighed as the report weighs them, and by the jobs outside
// labpool its queue shows running) and free, out of the GPUs its agent
// last said the cluster has. So the stacked layers add up to the GPUs the
// pool's header counts.

// clusterSpan is a cluster's GPUs held over [from, to) (zero to: now).
type clusterSpan struct {
	from, to time.Time
	gpus     float64
}

// clusterLayers counts, at each of times (unix seconds, each the start of
// step), the pool's cluster GPUs held and free, the means over the step.
func (r *Reader) clusterLayers(ctx context.Context, ids []string, times []int64, step time.Duration, now time.Time) (held, free []float64, err error) {
	recs, err := r.db.LatestByKind(ctx, KindNode)
	if err != nil {
		return nil, nil, fmt.Errorf("read node records: %w", err)
	}
	member := map[string]bool{}
	for _, id := range ids {
		member[id] = true
	}
	w := weights{clusters: map[string]int{}}
	var spans []clusterSpan
	total := 0
	for _, rec := range recs {
		var nr NodeRecord
		if !member[rec.Origin] || json.Unmarshal(rec.Data, &nr) != nil || nr.Cluster == nil {
			continue
		}
		size := clusterSize(nr.Cluster)
		w.clusters[rec.Origin], total = size, total+size
		js, ids, err := r.clusterJobSpans(ctx, rec.Origin, w, now)
		if err != nil {
			return nil, nil, err
		}
		spans = append(spans, js...)
		for _, q := range nr.Cluster.Queue {
			// a job's comment is anyone's to write: it is labpool's only
			// where the agent's records have it
			if !ids[q.LabpoolJob] && (q.State == "RUNNING" || q.State == "COMPLETING") && !q.Started.IsZero() {
				spans = append(spans, clusterSpan{from: q.Started, gpus: float64(min(max(0, q.GPUs), size))})
			}
		}
	}
	held, free = make([]float64, len(times)), make([]float64, len(times))
	if total == 0 {
		return held, free, nil
	}
	for i, t := range times {
		a := time.Unix(t, 0)
		b := a.Add(step)
		for _, s := range spans {
			to := s.to
			if to.IsZero() {
				to = now
			}
			held[i] += s.gpus * overlap(s.from, to, a, b) / step.Seconds()
		}
		held[i] = min(held[i], float64(total)) // never more than the clusters have
		free[i] = float64(total) - held[i]
	}
	return held, free, nil
}

// clusterJobSpans are the spans of the Slurm jobs node, a cluster's agent,
// launched: from start to end (running: to now), weighed by w; and the IDs
// of the jobs its records hold.
func (r *Reader) clusterJobSpans(ctx context.Context, node string, w weights, now time.Time) ([]clusterSpan, map[string]bool, error) {
	recs, err := r.db.Range(ctx, node, KindJob, time.Time{}, now.Add(24*time.Hour))
	if err != nil {
		return nil, nil, fmt.Errorf("read jobs of %s: %w", shortID(node), err)
	}
	var out []clusterSpan
	ids := map[string]bool{}
	for _, rec := range recs {
		var j jobs.Job
		if json.Unmarshal(rec.Data, &j) != nil || j.Executor != "slurm" || j.Started == nil {
			continue
		}
		ids[j.ID] = j.ID != ""
		s := clusterSpan{from: *j.Started, gpus: float64(w.cluster(node, j).Cluster)}
		switch {
		case j.Finished != nil:
			s.to = *j.Finished
		case j.State != jobs.Running && j.State != jobs.Starting:
			continue // ended with no end recorded
		}
		out = append(out, s)
	}
	return out, ids, nil
}
