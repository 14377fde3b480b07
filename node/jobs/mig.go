package jobs

import (
	"maps"
	"slices"
	"strings"

	"github.com/labpool/labpool/node/gpu"
)

// A MIG instance (a compute instance within a GPU instance of a GPU in MIG
// mode) is granted by its UUID, "MIG-...", like a GPU: it reaches the
// container as that UUID (NVIDIA_VISIBLE_DEVICES and the device request).
// A GPU in MIG mode is never granted whole; while one of its instances is
// held, it is held for every other job.

// maxMIG bounds the MIG instances one job asks for (7 per GPU, 8 GPUs).
const maxMIG = 56

// migSlot is where a MIG instance lives.
type migSlot struct {
	GPU      string // the UUID of its GPU
	Index    int    // that GPU's index
	MemBytes uint64
}

// validateMIG checks a spec's MIG instances: UUIDs, each once, alone.
func validateMIG(s Spec) error {
	if len(s.MIGIDs) == 0 {
		return nil
	}
	if s.GPUs > 0 || len(s.GPUIDs) > 0 {
		return refuse("gpus", "ask for a GPU count, GPU indexes or MIG instances, one of them")
	}
	if len(s.MIGIDs) > maxMIG {
		return refuse("gpus", "%d MIG instances asked: at most %d", len(s.MIGIDs), maxMIG)
	}
	seen := map[string]bool{}
	for _, u := range s.MIGIDs {
		if !strings.HasPrefix(u, "MIG-") || len(u) > 128 || strings.ContainsAny(u, ", \t\n=") {
			return refuse("gpus", "%q is not a MIG instance UUID (MIG-...; labpool gpus lists them)", u)
		}
		if seen[u] {
			return refuse("gpus", "MIG instance %s is listed twice", u)
		}
		seen[u] = true
	}
	return nil
}

// migHeld is the job other than job holding an instance of the GPU gpuUUID,
// "" when none. l.mu is held.
func (l *Ledger) migHeld(job, gpuUUID string) string {
	for u, slot := range l.mig {
		if holder, ok := l.grants[u]; ok && slot.GPU == gpuUUID && holder != job {
			return holder
		}
	}
	return ""
}

// grantMIG gives job the MIG instances uuids, all or none. An instance this
// machine does not have, or one on a quarantined or lost GPU, is refused
// (waiting would not help); one held, or on a GPU another job holds whole,
// is busy. l.mu is held.
func (l *Ledger) grantMIG(job string, uuids []string, gpus []gpu.Stats) ([]string, error) {
	var busy []BusyGPU
	for _, u := range uuids {
		slot, ok := l.mig[u]
		if !ok {
			return nil, refuse("mig instance", "no MIG instance %s on this machine (labpool gpus lists them)", u)
		}
		i := slices.IndexFunc(gpus, func(g gpu.Stats) bool { return g.UUID == slot.GPU })
		if i < 0 {
			return nil, refuse("mig instance", "the GPU of MIG instance %s is not read now", u)
		}
		g := gpus[i]
		if q, ok := l.quarantined[g.UUID]; ok {
			return nil, refuse("quarantined GPU", "MIG instance %s: gpu %d quarantined: %s", u, g.Index, q.Reason)
		}
		if g.Health == gpu.HealthLost {
			return nil, refuse("lost GPU", "MIG instance %s: gpu %d lost: %s", u, g.Index, g.HealthReason)
		}
		if holder, held := l.grants[u]; held && holder != job {
			busy = append(busy, BusyGPU{Index: g.Index, UUID: u, Job: holder})
		} else if holder, held := l.grants[g.UUID]; held && holder != job {
			busy = append(busy, BusyGPU{Index: g.Index, UUID: g.UUID, Job: holder})
		}
	}
	if len(busy) > 0 {
		return nil, &BusyError{Want: len(uuids), Free: len(uuids) - len(busy), Total: len(l.mig), Busy: busy}
	}
	for _, u := range uuids {
		l.grants[u] = job
	}
	return slices.Clone(uuids), nil
}

// grantMIGParents adds to granted (UUID -> job) the GPU of each granted
// MIG instance that no job holds whole. l.mu is held.
func (l *Ledger) grantMIGParents(granted map[string]string) {
	for _, u := range slices.Sorted(maps.Keys(l.mig)) {
		slot := l.mig[u]
		if j, ok := l.grants[u]; ok && granted[slot.GPU] == "" {
			granted[slot.GPU] = j
		}
	}
}

// Indexes are the GPU indexes of the granted uuids (GPUs, or MIG instances
// by their GPU's index), each once, in index order.
func (l *Ledger) Indexes(uuids []string, gpus []gpu.Stats) []int {
	l.mu.Lock()
	whole := make([]string, 0, len(uuids))
	for _, u := range uuids {
		if slot, ok := l.mig[u]; ok {
			u = slot.GPU
		}
		whole = append(whole, u)
	}
	l.mu.Unlock()
	return indexesOf(whole, gpus)
}
