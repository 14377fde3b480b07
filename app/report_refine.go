package app

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/labpool/labpool/app/history"
)

// A coarse tier point stands in for the finer points of its step wherever
// they would give the report the same figures: the report's measures are
// sums over points, linear in each point's means and samples, except where
// a point is cut (by the window, a grant, or the stretch an energy counter
// covers) or where idle is judged (a point's mean utilization against
// idleBelow). So a coarse point is read in place of its finer ones when no
// such edge lies inside it and, on each GPU granted in it, its utilization
// stayed on one side of idleBelow (its least and greatest samples). A
// report over a week then reads a few hundred points a machine and the
// finer tiers only around a job's start and end.

// refinePlan is what decides, for one node, whether a coarse point may
// stand in for its finer ones.
type refinePlan struct {
	edges  []time.Time            // sorted: the window's ends, grants' ends, counter coverage changes
	grants map[int][][2]time.Time // per GPU, the spans granted
	open   bool                   // a grant still runs (endSilent may end it at the node's last sample)
}

// newRefinePlan is the plan for a node with grants js over [since, until),
// whose GPUs' counter readings us holds.
func newRefinePlan(js []reportJob, us []gpuUsage, since, until time.Time) *refinePlan {
	p := &refinePlan{edges: []time.Time{since, until}, grants: map[int][][2]time.Time{}}
	for _, j := range js {
		end := j.End
		if end.IsZero() {
			end, p.open = until, true
		}
		p.edges = append(p.edges, j.Start, end)
		for _, g := range j.GPUs {
			p.grants[g] = append(p.grants[g], [2]time.Time{j.Start, end})
		}
	}
	p.edges = append(p.edges, coverageEdges(us)...)
	slices.SortFunc(p.edges, func(a, b time.Time) int { return a.Compare(b) })
	return p
}

// coverageEdges are the times where the stretches that GPUs' counters can
// be trusted over (as gpuUsage.trusted finds them) start or end.
func coverageEdges(us []gpuUsage) []time.Time {
	var out []time.Time
	for _, u := range us {
		covered := false
		for i := 1; i < len(u.Counter); i++ {
			p, c := u.Counter[i-1], u.Counter[i]
			if ok := p.MJ > 0 && c.MJ >= p.MJ && c.Time.After(p.Time); ok != covered {
				out, covered = append(out, p.Time), ok
			}
		}
		if n := len(u.Counter); n > 0 {
			out = append(out, u.Counter[n-1].Time) // the live sample may extend coverage from here
		}
	}
	return out
}

// stands reports whether coarse point p may stand in for its finer points:
// no edge inside the time it stands for, and on each GPU granted in it the
// utilization of all its samples on one side of idleBelow. The newest point
// of a read does not while a grant runs (endSilent may end it there). A
// nil plan lets no point stand in.
func (pl *refinePlan) stands(p meanPoint, newest bool) bool {
	if pl == nil {
		return false
	}
	lo, hi := p.Time.Add(-sampleInterval), p.Time.Add(p.Step-sampleInterval)
	if newest && pl.open {
		return false
	}
	i := sort.Search(len(pl.edges), func(i int) bool { return pl.edges[i].After(lo) })
	if i < len(pl.edges) && pl.edges[i].Before(hi) {
		return false
	}
	for _, g := range p.GPUs {
		if g.Lo >= idleBelow || g.Hi < idleBelow {
			continue
		}
		for _, s := range pl.grants[g.Index] {
			if s[0].Before(hi) && s[1].After(lo) {
				return false
			}
		}
	}
	return true
}

// refined reads node's points of [from, to) as tier would give them: the
// points of coarser tiers that stand in for tier's (refinePlan.stands),
// and tier's own elsewhere (all of them with a nil plan). Where tier holds
// no point of a coarse step that does not stand in, or starts within it
// (no point at its start nor in the step before), the coarse point is
// kept, as spanPoints keeps the coarser tier's where a tier starts late.
// Oldest first.
func (r *Reader) refined(ctx context.Context, node string, tier int, from, to time.Time, pl *refinePlan) ([]meanPoint, error) {
	if pl == nil || tier == len(history.Resolutions)-1 {
		return r.points(ctx, node, tier, from, to)
	}
	step := history.Resolutions[tier+1].Step
	lo, hi := ceilTime(from, step), to.Truncate(step)
	if !lo.Before(hi) {
		return r.points(ctx, node, tier, from, to)
	}
	coarse, err := r.refined(ctx, node, tier+1, lo, hi, pl)
	if err != nil {
		return nil, err
	}
	out, err := r.points(ctx, node, tier, from, lo)
	if err != nil {
		return nil, err
	}
	cursor := lo
	var pending []meanPoint // coarse points since cursor that do not stand in
	for i, c := range coarse {
		if c.Step == step && !pl.stands(c, i == len(coarse)-1) {
			pending = append(pending, c)
			continue
		}
		if out, err = r.fill(ctx, node, tier, cursor, c.Time, pending, out); err != nil {
			return nil, err
		}
		out, cursor, pending = append(out, c), c.Time.Add(c.Step), pending[:0]
	}
	return r.fill(ctx, node, tier, cursor, to, pending, out)
}

// fill appends to out tier's points of [from, to), where pending are the
// coarse points of that time that do not stand in (see refined). A coarse
// point is kept where tier's points of its step hold fewer samples than it
// does: a follower's catch-up leaves 1 s samples out (history.SkipOnCatchUp)
// while their minute comes, and a job within the seconds left out would
// otherwise be all unmeasured.
func (r *Reader) fill(ctx context.Context, node string, tier int, from, to time.Time, pending, out []meanPoint) ([]meanPoint, error) {
	if !from.Before(to) {
		return out, nil
	}
	fs := history.Resolutions[tier].Step
	fine, err := r.points(ctx, node, tier, from.Add(-fs), to) // with the point before, if any
	if err != nil {
		return nil, err
	}
	j := 0
	for j < len(fine) && fine[j].Time.Before(from) {
		j++
	}
	for _, c := range pending {
		for ; j < len(fine) && fine[j].Time.Before(c.Time); j++ {
			out = append(out, fine[j])
		}
		k := j
		for k < len(fine) && fine[k].Time.Before(c.Time.Add(c.Step)) {
			k++
		}
		prev := j > 0 && fine[j-1].Time.Equal(c.Time.Add(-fs))
		if k == j || !fine[j].Time.Equal(c.Time) && !prev || samples(fine[j:k]) < c.N {
			out = append(out, c)
		} else {
			out = append(out, fine[j:k]...)
		}
		j = k
	}
	return append(out, fine[j:]...), nil
}

// samples is how many samples pts stand for.
func samples(pts []meanPoint) int {
	n := 0
	for _, p := range pts {
		n += p.N
	}
	return n
}
