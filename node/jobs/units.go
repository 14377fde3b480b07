package jobs

import (
	"maps"
	"slices"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// unitsLocked is what this machine offers alloc.Fit now: each GPU of gpus
// (the latest telemetry) with the memory GPUMemFor gives, down while it
// is lost, quarantined or in MIG mode; and each MIG instance of a GPU
// read now, down while its GPU is lost or quarantined. l.mu is held.
func (l *Ledger) unitsLocked(gpus []gpu.Stats) []alloc.Unit {
	out := make([]alloc.Unit, 0, len(gpus)+len(l.mig))
	read := make(map[string]gpu.Stats, len(gpus))
	for _, g := range gpus {
		read[g.UUID] = g
		u := alloc.Unit{ID: g.UUID, Kind: alloc.GPU, Index: g.Index, Count: 1,
			MemBytes: GPUMemFor(g.MemTotalBytes, g.MemUsedBytes, g.MemUnified)}
		if u.Down = l.down(g); u.Down == "" && l.migOn[g.UUID] {
			u.Down = migOnWhy
		}
		out = append(out, u)
	}
	for _, id := range l.migOrder {
		s := l.mig[id]
		g, ok := read[s.GPU]
		if !ok {
			continue
		}
		out = append(out, alloc.Unit{ID: id, Kind: alloc.MIG, Index: s.Index, Parent: s.GPU, Profile: s.Profile,
			MemBytes: s.MemBytes, Count: 1, Down: l.down(g)})
	}
	return out
}

// down says why g goes to no new grant ("" when it may): lost, or
// quarantined. l.mu is held.
func (l *Ledger) down(g gpu.Stats) string {
	if g.Health == gpu.HealthLost {
		return "lost: " + g.HealthReason
	}
	if q, ok := l.quarantined[g.UUID]; ok {
		return "quarantined: " + q.Reason
	}
	return ""
}

// externalHolder holds the GPUs that processes outside labpool use.
var externalHolder = alloc.Holder{Kind: alloc.External, ID: "outside labpool", Name: "a process outside labpool"}

// grantsLocked is every grant here, for alloc.Fit: the jobs' (in ID
// order), what starving queued jobs keep (Rekeep), what SetHeld gave (by source), and the GPUs external names as
// held outside labpool. A grant of a whole GPU in MIG mode holds its
// instances too. l.mu is held.
func (l *Ledger) grantsLocked(external map[string]bool) []alloc.Grant {
	n := len(l.jobs) + len(l.kept) + 1
	for _, gs := range l.held {
		n += len(gs)
	}
	out := make([]alloc.Grant, 0, n)
	for _, id := range slices.Sorted(maps.Keys(l.jobs)) {
		out = append(out, l.withInstances(l.jobs[id]))
	}
	out = append(out, l.keptLocked()...)
	for _, src := range slices.Sorted(maps.Keys(l.held)) {
		for _, g := range l.held[src] {
			out = append(out, l.withInstances(g))
		}
	}
	if len(external) > 0 {
		ext := alloc.Grant{Holder: externalHolder}
		for _, u := range slices.Sorted(maps.Keys(external)) {
			if external[u] {
				ext.Units = append(ext.Units, u)
			}
		}
		out = append(out, ext)
	}
	return out
}

// withInstances is g, holding also the MIG instances of each GPU it holds
// whole (a copy where it adds any). l.mu is held.
func (l *Ledger) withInstances(g alloc.Grant) alloc.Grant {
	if len(l.migOn) == 0 || g.Share > 0 && g.Share < 1 {
		return g
	}
	var add []string
	for _, u := range g.Units {
		if !l.migOn[u] {
			continue
		}
		for _, id := range l.migOrder {
			if l.mig[id].GPU == u {
				add = append(add, id)
			}
		}
	}
	if len(add) > 0 {
		g.Units = append(slices.Clone(g.Units), add...)
	}
	return g
}

// holds reports whether job holds unit u. l.mu is held.
func (l *Ledger) holds(job, u string) bool {
	g, ok := l.jobs[job]
	return ok && slices.Contains(g.Units, u)
}

// Allocation is this machine's view for alloc.Fit, as its ledger holds it
// now: its units (each naming this node) and every grant on them,
// processes outside labpool as External grants. The node publishes it,
// so that every planner in the pool decides on the authority's view.
func (m *Manager) Allocation() ([]alloc.Unit, []alloc.Grant) {
	gpus := m.gpus.GPUs()
	ext := m.external(gpus)
	m.keepStarving(gpus, ext)
	m.ledger.mu.Lock()
	defer m.ledger.mu.Unlock()
	units := m.ledger.unitsLocked(gpus)
	listed := make(map[string]bool, len(units))
	for i := range units {
		units[i].Node = m.cfg.Node
		listed[units[i].ID] = true
	}
	// A grant names only units read now: a GPU gone from the reading
	// (until it comes back) is no unit a planner could be given.
	var grants []alloc.Grant
	for _, g := range m.ledger.grantsLocked(ext) {
		g.Units = slices.DeleteFunc(slices.Clone(g.Units), func(u string) bool { return !listed[u] })
		if len(g.Units) > 0 {
			grants = append(grants, g)
		}
	}
	return units, grants
}
