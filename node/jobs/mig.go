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
// They are asked for by UUID, or as a count of a profile ("3g.40gb"),
// placed like GPUs (alloc.Fit). A GPU in MIG mode is never granted whole
// (its unit is down for whole requests); a GPU held whole holds its
// instances too.

// maxMIG bounds the MIG instances one job asks for (7 per GPU, 8 GPUs).
const maxMIG = 56

// migSlot is where a MIG instance lives.
type migSlot struct {
	GPU      string // the UUID of its GPU
	Index    int    // that GPU's index
	MemBytes uint64
	Profile  string // "3g.40gb"
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

// refuseMIG refuses MIG instances uuids asked by UUID that this machine
// does not have, or whose GPU is not read now, quarantined or lost:
// waiting would not help. stats are the GPUs' readings by UUID. l.mu is
// held.
func (l *Ledger) refuseMIG(uuids []string, stats map[string]gpu.Stats) error {
	for _, u := range uuids {
		slot, ok := l.mig[u]
		if !ok {
			return refuse("mig instance", "no MIG instance %s on this machine (labpool gpus lists them)", u)
		}
		g, ok := stats[slot.GPU]
		if !ok {
			return refuse("mig instance", "the GPU of MIG instance %s is not read now", u)
		}
		if q, ok := l.quarantined[g.UUID]; ok {
			return refuse("quarantined GPU", "MIG instance %s: gpu %d quarantined: %s", u, g.Index, q.Reason)
		}
		if g.Health == gpu.HealthLost {
			return refuse("lost GPU", "MIG instance %s: gpu %d lost: %s", u, g.Index, g.HealthReason)
		}
	}
	return nil
}

// profileCount is how many MIG instances of profile this machine has.
// l.mu is held.
func (l *Ledger) profileCount(profile string) int {
	n := 0
	for _, s := range l.mig {
		if s.Profile == profile {
			n++
		}
	}
	return n
}

// migProfile is a MIG instance's profile from its name: "3g.40gb" of
// "NVIDIA A100-SXM4-80GB MIG 3g.40gb".
func migProfile(name string) string {
	_, p, ok := strings.Cut(name, "MIG ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(p)
}

// grantMIGParents adds to granted (UUID -> job) the GPU of each granted
// MIG instance that no job holds whole. l.mu is held.
func (l *Ledger) grantMIGParents(granted map[string]string) {
	for _, u := range slices.Sorted(maps.Keys(l.mig)) {
		slot := l.mig[u]
		if j, ok := granted[u]; ok && granted[slot.GPU] == "" {
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
