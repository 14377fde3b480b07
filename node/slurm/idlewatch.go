package slurm

import (
	"slices"
	"time"

	"github.com/labpool/labpool/node/alloc"
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

// Observe looks at one sample taken at now and who held its GPUs (held,
// where Procs.Annotate named the Slurm jobs), under a policy of limit (0:
// off) and below percent, and returns the Slurm jobs to warn of now.
func (w *IdleWatch) Observe(now time.Time, gs []gpu.Stats, held alloc.Holding, limit time.Duration, below float64) []IdleWarning {
	if w.since == nil {
		w.since, w.warned = map[string]time.Time{}, map[string]bool{}
	}
	byHolder := map[string]*IdleWarning{}
	busy := map[string]bool{}
	var order []string
	for _, g := range gs {
		gh := held.GPU(g.UUID)
		holder := gh.Scheduler()
		if holder == "" {
			continue
		}
		h, ok := byHolder[holder]
		if !ok {
			h = &IdleWarning{Holder: holder, Job: gh.JobID()}
			byHolder[holder] = h
			order = append(order, holder)
		}
		h.GPUs = append(h.GPUs, g.Index)
		busy[holder] = busy[holder] || g.UtilPercent >= below
		for _, p := range g.Processes {
			if ph := held.Proc(p.PID); ph.Scheduler() == holder && ph.Member != "" {
				h.Owner = ph.Member
			}
		}
	}
	for holder := range w.since {
		if byHolder[holder] == nil || busy[holder] || limit <= 0 {
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
			h := byHolder[holder]
			h.Since = since
			slices.Sort(h.GPUs)
			out = append(out, *h)
		}
	}
	return out
}
