package jobs

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// Quarantine is a GPU kept from new jobs for a critical fault (an XID such
// as 79, uncorrectable ECC errors, retired pages or remapped rows pending)
// until an owner of the pool, or this machine's user, clears it. It
// survives restarts: the daemon keeps it in the machine's local settings.
type Quarantine struct {
	UUID   string    `json:"uuid"`
	Index  int       `json:"index"`
	Reason string    `json:"reason"` // e.g. "XID 79 (GPU has fallen off the bus)"
	Since  time.Time `json:"since"`
}

// HealthState is what HealthStore keeps: the quarantines, and what owners
// accepted when clearing them (so a restart does not quarantine a GPU
// again for the same faults).
type HealthState struct {
	Quarantined map[string]Quarantine `json:"quarantined"` // by GPU UUID
	Acks        map[string]gpu.Ack    `json:"acks"`        // by GPU UUID
}

// HealthStore keeps the HealthState in this machine's local settings
// (never replicated).
type HealthStore interface {
	SaveHealth(HealthState) error
	LoadHealth() (HealthState, error)
}

// FaultClearer forgets, or accepts again after a restart, the faults NVML
// reported on a GPU (*gpu.Sampler is one).
type FaultClearer interface {
	Clear(ctx context.Context, uuid string) (gpu.Ack, error)
	Acknowledge(ctx context.Context, uuid string, a gpu.Ack) error
}

// gpuHealth is the manager's part in GPU health: where quarantines are
// kept, and the sampler to clear.
type gpuHealth struct {
	mu      sync.Mutex // guards the fields below; taken before the ledger's
	store   HealthStore
	clearer FaultClearer
	acks    map[string]gpu.Ack
	cleared map[string]time.Time // GPU UUID -> when its quarantine was last cleared
	lost    map[int]bool         // GPU indexes seen lost, to log it once
}

// OpenHealth loads the quarantines kept in store into the ledger and hands
// the accepted faults to clearer (either may be nil: nothing kept, no
// NVML). Call it before Run.
func (m *Manager) OpenHealth(ctx context.Context, store HealthStore, clearer FaultClearer) error {
	h := &m.health
	h.mu.Lock()
	defer h.mu.Unlock()
	h.store, h.clearer, h.acks = store, clearer, map[string]gpu.Ack{}
	if store == nil {
		return nil
	}
	st, err := store.LoadHealth()
	if err != nil {
		return fmt.Errorf("read the GPU quarantines: %w", err)
	}
	for _, q := range st.Quarantined {
		m.ledger.Quarantine(q)
	}
	maps.Copy(h.acks, st.Acks)
	if clearer != nil {
		for uuid, a := range h.acks {
			if err := clearer.Acknowledge(ctx, uuid, a); err != nil {
				m.log.Warn("accept the faults an owner cleared", "gpu", uuid, "err", err)
			}
		}
	}
	return nil
}

// saveLocked writes the health state; h.mu is held.
func (m *Manager) saveHealthLocked() {
	h := &m.health
	if h.store == nil {
		return
	}
	st := HealthState{Quarantined: map[string]Quarantine{}, Acks: maps.Clone(h.acks)}
	for _, q := range m.ledger.Quarantines() {
		st.Quarantined[q.UUID] = q
	}
	if err := h.store.SaveHealth(st); err != nil {
		m.log.Error("keep the GPU quarantines", "err", err)
	}
}

// AnnotateGPUs completes one GPU sample before it is published: a GPU NVML
// finds critically faulty is quarantined (kept across restarts); a
// quarantined one reads "quarantined" with its fault even when NVML no
// longer reports it (an XID is reported once); each GPU names the job
// holding it in held; each process runs in a labpool container names its
// job and owner there (the reading itself carries hardware only). taken
// is when the sample was taken: one taken before a quarantine was cleared
// does not quarantine the GPU again.
func (m *Manager) AnnotateGPUs(taken time.Time, gs []gpu.Stats, held *alloc.Holding) {
	granted := m.ledger.Granted()
	m.health.mu.Lock()
	cleared := maps.Clone(m.health.cleared)
	m.health.mu.Unlock()
	var added []Quarantine
	for i := range gs {
		g := &gs[i]
		if job := granted[g.UUID]; job != "" {
			held.HoldGPU(g.UUID, alloc.Holder{Kind: alloc.Job, ID: job})
		}
		if g.Health == gpu.HealthQuarantined && !taken.Before(cleared[g.UUID]) {
			q := Quarantine{UUID: g.UUID, Index: g.Index, Reason: g.HealthReason, Since: time.Now().UTC()}
			if m.ledger.Quarantine(q) || m.ledger.Requarantine(q) {
				added = append(added, q) // new, or a new fault joined it
			}
		} else if q, ok := m.ledger.Quarantined(g.UUID); ok && g.Health != gpu.HealthLost {
			g.Health, g.HealthReason = gpu.HealthQuarantined, q.Reason
		}
	}
	m.mapProcesses(gs, held)
	m.health.mu.Lock()
	defer m.health.mu.Unlock()
	m.logLostLocked(gs, granted)
	if len(added) == 0 {
		return
	}
	for _, q := range added {
		m.log.Warn("GPU quarantined: no new job gets it until an owner clears it",
			"gpu", q.Index, "uuid", q.UUID, "reason", q.Reason)
	}
	m.saveHealthLocked()
}

// logLostLocked logs a GPU NVML lost, once, with the job granted it;
// m.health.mu is held.
func (m *Manager) logLostLocked(gs []gpu.Stats, granted map[string]string) {
	h := &m.health
	for _, g := range gs {
		if g.Health == gpu.HealthLost && !h.lost[g.Index] {
			if h.lost == nil {
				h.lost = map[int]bool{}
			}
			h.lost[g.Index] = true
			m.log.Error("GPU lost: no new job gets it; the others keep reporting (a reboot may bring it back)",
				"gpu", g.Index, "uuid", g.UUID, "reason", g.HealthReason, "job", granted[g.UUID])
		}
	}
}

// ClearGPU lifts the quarantine of the GPU with index: an owner of the pool
// or this machine's user vouches for it. The faults NVML reported so far
// are accepted; a new one quarantines it again.
func (m *Manager) ClearGPU(ctx context.Context, c Caller, index int) (Quarantine, error) {
	if !m.local(c) && c.Role != RoleOwner {
		return Quarantine{}, forbid(RuleClearGPU,
			"this device is %s of the pool", roleName(c.Role))
	}
	var uuid string
	for _, g := range m.gpus.GPUs() {
		if g.Index == index {
			uuid = g.UUID
		}
	}
	if uuid == "" {
		return Quarantine{}, fmt.Errorf("gpu %d: %w", index, ErrNotFound)
	}
	h := &m.health
	h.mu.Lock()
	defer h.mu.Unlock()
	q, ok := m.ledger.Quarantined(uuid)
	if !ok {
		return Quarantine{}, notQuarantined(index)
	}
	if h.clearer != nil {
		a, err := h.clearer.Clear(ctx, uuid)
		if err != nil {
			return Quarantine{}, fmt.Errorf("clear gpu %d: %w", index, err)
		}
		if h.acks == nil {
			h.acks = map[string]gpu.Ack{}
		}
		h.acks[uuid] = a
	}
	m.ledger.Unquarantine(uuid)
	if h.cleared == nil {
		h.cleared = map[string]time.Time{}
	}
	h.cleared[uuid] = time.Now()
	m.saveHealthLocked()
	m.log.Info("GPU quarantine cleared", "gpu", index, "uuid", uuid, "was", q.Reason, "by", c.ID)
	m.wake()
	return q, nil
}

func roleName(role string) string {
	switch role {
	case "":
		return "not a member"
	case RoleAdmin:
		return "an admin"
	}
	return "a " + role
}

// clearGPU serves POST /v1/gpus/{index}/clear: ClearGPU for the caller.
func (h *handler) clearGPU(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(r.PathValue("index"))
	if err != nil || i < 0 {
		writeError(w, http.StatusBadRequest, "invalid", "gpu index "+strconv.Quote(r.PathValue("index"))+": want a number")
		return
	}
	q, err := h.m.ClearGPU(r.Context(), h.caller(r), i)
	reply(w, q, err)
}

// notQuarantinedError is ClearGPU's answer for a GPU that is healthy: a
// conflict (errors.Is ErrConflict) that says so, not in a job's words
// ("not possible in the job's state").
type notQuarantinedError struct{ index int }

func notQuarantined(index int) error { return notQuarantinedError{index} }

func (e notQuarantinedError) Error() string {
	return fmt.Sprintf("gpu %d is not quarantined: there is nothing to clear", e.index)
}

func (e notQuarantinedError) Unwrap() error { return ErrConflict }
