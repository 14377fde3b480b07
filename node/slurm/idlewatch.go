package slurm

import (
	"slices"
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// IdleWatch applies a compute node's idle reclaim policy to the Slurm jobs
// holding its GPUs, as far as a compute node may: it never stops one (its
// agent did not launch it; Slurm and the cluster's agent own it), it warns
// once per idle stretch, when all the GPUs a Slurm job holds here stayed
// under the policy's utilization for the policy's time. The sampling loop
// owns it: it is not safe for concurrent use.
type IdleWatch struct {
	since  map[string]time.Time // holder -> since when its GPUs are idle
	warned map[string]bool      // holders warned of in their current idle stretch
}

// IdleWarning is a Slurm job idle for the policy's time on this node.
type IdleWarning struct {
	Holder     string // "slurm job 123"
	Job, Owner string // labpool's job and its owner, when labpool launched it
	GPUs       []int  // the GPUs it holds here, by index
	Since      time.Time
}

// Observe looks at one annotated sample (Procs.Annotate) taken at now,
// under a policy of limit (0: off) and below percent, and returns the
// Slurm jobs to warn of now.
func (w *IdleWatch) Observe(now time.Time, gs []gpu.Stats, limit time.Duration, below float64) []IdleWarning {
	if w.since == nil {
		w.since, w.warned = map[string]time.Time{}, map[string]bool{}
	}
	held := map[string]*IdleWarning{}
	busy := map[string]bool{}
	var order []string
	for _, g := range gs {
		if g.Holder == "" {
			continue
		}
		h, ok := held[g.Holder]
		if !ok {
			h = &IdleWarning{Holder: g.Holder, Job: g.Job}
			held[g.Holder] = h
			order = append(order, g.Holder)
		}
		h.GPUs = append(h.GPUs, g.Index)
		busy[g.Holder] = busy[g.Holder] || g.UtilPercent >= below
		for _, p := range g.Processes {
			if p.Holder == g.Holder && p.Owner != "" {
				h.Owner = p.Owner
			}
		}
	}
	for holder := range w.since {
		if held[holder] == nil || busy[holder] || limit <= 0 {
			delete(w.since, holder)
			delete(w.warned, holder)
		}
	}
	var out []IdleWarning
	for _, holder := range order {
		if busy[holder] || limit <= 0 {
			continue
		}
		since, ok := w.since[holder]
		if !ok {
			since = now
			w.since[holder] = since
		}
		if now.Sub(since) >= limit && !w.warned[holder] {
			w.warned[holder] = true
			h := held[holder]
			h.Since = since
			slices.Sort(h.GPUs)
			out = append(out, *h)
		}
	}
	return out
}
