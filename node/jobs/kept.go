package jobs

import (
	"maps"
	"slices"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// Kept is a queued job that waited past StarveAfter and what it asks
// (queue.go, rule 3).
type Kept struct {
	Job  string
	Want Request
}

// Rekeep replaces what starving queued jobs keep: for each of starving,
// in queue order, the units alloc.Fit finds free for it (after those kept
// for the jobs before it), up to what it asks, as an alloc.Queued grant.
// A count of GPUs or of MIG instances by profile keeps the most of them
// that fit; GPUs by index or MIG instances by UUID keep those of them
// free; a share keeps its share of the GPU it would use (the one with the
// most share left), so that no other share or whole job takes what frees
// up there. No other job is granted what is kept (Fit: "kept for queued
// job X, waiting the longest"); the job itself is, and Release ends it.
func (l *Ledger) Rekeep(starving []Kept, gpus []gpu.Stats, external map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept = make(map[string]alloc.Grant, len(starving))
	if len(starving) == 0 {
		return
	}
	stats := make(map[string]gpu.Stats, len(gpus))
	for _, g := range gpus {
		stats[g.UUID] = g
	}
	units, now := l.unitsLocked(gpus), l.clock()
	grants := l.grantsLocked(external) // each job's keep joins them for the next
	for _, k := range starving {
		if g, ok := l.keepFor(k, units, grants, gpus, stats); ok {
			g.From = now
			l.kept[k.Job] = g
			grants = append(grants, l.withInstances(g))
		}
	}
}

// keepFor is what k keeps of units now, given grants (those kept for
// the jobs before it included). l.mu is held.
func (l *Ledger) keepFor(k Kept, units []alloc.Unit, grants []alloc.Grant, gpus []gpu.Stats, stats map[string]gpu.Stats) (alloc.Grant, bool) {
	if k.Want.want() == 0 || l.refuseFaulty(k.Job, k.Want, gpus) != nil {
		return alloc.Grant{}, false
	}
	r, _, err := l.request(k.Job, k.Want, gpus, stats)
	if err != nil {
		return alloc.Grant{}, false
	}
	now := l.clock()
	if k.Want.Limit > 0 {
		r.Until = now.Add(k.Want.Limit)
	}
	holder := alloc.Holder{Kind: alloc.Queued, ID: k.Job, Member: k.Want.Owner, Name: k.Want.Name}
	d := l.fit(units, grants, r, now)
	switch {
	case d.Fits:
	case r.Share > 0:
		d = mostShareLeft(d)
	case len(r.Units) > 0:
		passed := map[string]bool{}
		for _, p := range d.Passed {
			passed[p.Unit.ID] = true
		}
		d.Units = nil
		for _, u := range units {
			if slices.Contains(r.Units, u.ID) && !passed[u.ID] {
				d.Units = append(d.Units, u)
			}
		}
	case d.Free > 0:
		r.Count = min(d.Free, r.Count-1) // as many as were free of those it looks at
		if d = l.fit(units, grants, r, now); !d.Fits {
			d.Units = nil
		}
	default:
		d.Units = nil
	}
	if len(d.Units) == 0 {
		return alloc.Grant{}, false
	}
	return d.Grant(holder, now, time.Time{}), true
}

// mostShareLeft is d, a share that did not fit, choosing the GPU with the
// most share left of those its share alone did not fit on.
func mostShareLeft(d alloc.Decision) alloc.Decision {
	best := -1.0
	d.Units = nil
	for _, p := range d.Passed {
		if p.Reason == alloc.ShareFull && p.Free > best {
			best, d.Units = p.Free, []alloc.Unit{p.Unit}
		}
	}
	return d
}

// grantsFor is every grant here but what job keeps as a starving queued
// job (its own kept units never keep it out). l.mu is held.
func (l *Ledger) grantsFor(job string, external map[string]bool) []alloc.Grant {
	out := l.grantsLocked(external)
	if _, ok := l.kept[job]; !ok || job == "" {
		return out
	}
	return slices.DeleteFunc(out, func(g alloc.Grant) bool { return g.Holder.Kind == alloc.Queued && g.Holder.ID == job })
}

// keptLocked is what starving queued jobs keep, in job ID order. l.mu is
// held.
func (l *Ledger) keptLocked() []alloc.Grant {
	out := make([]alloc.Grant, 0, len(l.kept))
	for _, id := range slices.Sorted(maps.Keys(l.kept)) {
		out = append(out, l.withInstances(l.kept[id]))
	}
	return out
}

// keepStarving gives the queued jobs that waited past StarveAfter what
// they keep (Ledger.Rekeep), in queue order.
func (m *Manager) keepStarving(gpus []gpu.Stats, external map[string]bool) {
	var ks []Kept
	for _, j := range m.starving() {
		ks = append(ks, Kept{Job: j.ID, Want: j.request()})
	}
	m.ledger.Rekeep(ks, gpus, external)
}

// fit is alloc.Fit over holders named by their person (Ledger.person):
// the grants of a person's devices are one member's to Fit.
func (l *Ledger) fit(units []alloc.Unit, grants []alloc.Grant, r alloc.Request, now time.Time) alloc.Decision {
	if l.person == nil {
		return alloc.Fit(units, grants, r, now)
	}
	byPerson := make([]alloc.Grant, len(grants))
	for i, g := range grants {
		if g.Holder.Member != "" {
			g.Holder.Member = l.person(g.Holder.Member)
		}
		byPerson[i] = g
	}
	if r.Holder.Member != "" {
		r.Holder.Member = l.person(r.Holder.Member)
	}
	return alloc.Fit(units, byPerson, r, now)
}
