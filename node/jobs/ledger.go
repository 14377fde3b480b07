package jobs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// Request is the GPUs a job asks for: a count, or indexes, each with at
// least MinMemBytes of memory.
type Request struct {
	Count       int
	Indexes     []int
	MIG         []string // MIG instances by UUID (mig.go)
	MinMemBytes uint64
}

// want is how many GPUs r asks for.
func (r Request) want() int {
	if len(r.MIG) > 0 {
		return len(r.MIG)
	}
	if len(r.Indexes) > 0 {
		return len(r.Indexes)
	}
	return r.Count
}

// BusyGPU is one GPU that could not be granted, and why.
type BusyGPU struct {
	Index int
	UUID  string
	Job   string // the job holding it, or the queued job it is kept for
	Owner string // that job's owner, when known
	// JobName and OwnerName are what a person reads for Job and Owner:
	// the job's name and the owner's member name, when known.
	JobName   string
	OwnerName string
	Reserved  bool   // kept for a queued job that waited too long (Job)
	External  bool   // used by a process outside labpool
	TooSmall  bool   // less memory than asked
	MemBytes  uint64 // its memory, when TooSmall: what GPUMemFor offers
	Unified   bool   // TooSmall, and MemBytes is the system's free memory
	// Quarantined and Lost: a GPU with a critical fault, or one NVML lost,
	// goes to no new job; Reason says which fault.
	Quarantined bool
	Lost        bool
	Reason      string
	// MIGOn: the GPU is partitioned; a job asks for one of its instances
	// by UUID, never the whole GPU.
	MIGOn bool
}

func (b BusyGPU) String() string {
	switch {
	case b.Quarantined:
		return fmt.Sprintf("GPU %d: quarantined: %s", b.Index, b.Reason)
	case b.Lost:
		return fmt.Sprintf("GPU %d: lost: %s", b.Index, b.Reason)
	case b.Reserved:
		return fmt.Sprintf("GPU %d: kept for queued job %s of %s, waiting the longest", b.Index, b.jobName(), b.ownerName())
	case b.MIGOn:
		return fmt.Sprintf("GPU %d: MIG on (ask for one of its instances by UUID: labpool gpus lists them)", b.Index)
	case b.External:
		return fmt.Sprintf("GPU %d: a process outside labpool", b.Index)
	case b.TooSmall && b.Unified:
		return fmt.Sprintf("GPU %d: %d GiB free of unified memory, less than asked", b.Index, b.MemBytes>>30)
	case b.TooSmall:
		return fmt.Sprintf("GPU %d: %d MiB, less than asked", b.Index, b.MemBytes>>20)
	case b.Owner != "":
		return fmt.Sprintf("GPU %d: job %s of %s", b.Index, b.jobName(), b.ownerName())
	}
	return fmt.Sprintf("GPU %d: job %s", b.Index, b.jobName())
}

// jobName is the job's name, or its short ID.
func (b BusyGPU) jobName() string {
	if b.JobName != "" {
		return b.JobName
	}
	return shortID(b.Job, 8)
}

// ownerName is the owner's member name, or its short device ID.
func (b BusyGPU) ownerName() string {
	if b.OwnerName != "" {
		return b.OwnerName
	}
	return shortID(b.Owner, 9)
}

func shortID(id string, n int) string {
	if len(id) > n {
		return id[:n]
	}
	return id
}

// BusyError says which GPUs kept a request from being granted.
type BusyError struct {
	Want  int
	Free  int       // GPUs that matched and were free
	Total int       // GPUs on this machine
	Busy  []BusyGPU // the matching GPUs that were not free
}

func (e *BusyError) Error() string {
	if len(e.Busy) == 0 {
		return fmt.Sprintf("%d GPUs asked, this machine has %d", e.Want, e.Total)
	}
	// GPUs held for the same reason (one job's) are said once:
	// "GPUs 0, 1, 2, 3: job train of alice".
	var parts []string
	var idx []string
	for i, b := range e.Busy {
		idx = append(idx, strconv.Itoa(b.Index))
		why := strings.SplitN(b.String(), ": ", 2)[1]
		if i+1 < len(e.Busy) && strings.SplitN(e.Busy[i+1].String(), ": ", 2)[1] == why {
			continue
		}
		gpus := "GPU " + idx[0]
		if len(idx) > 1 {
			gpus = "GPUs " + strings.Join(idx, ", ")
		}
		parts, idx = append(parts, gpus+": "+why), nil
	}
	return fmt.Sprintf("%d GPUs asked, %d free: %s", e.Want, e.Free, strings.Join(parts, "; "))
}

// Ledger records which job holds each GPU, by UUID. A GPU is granted to one
// job at a time, and never while processes outside labpool use it, nor
// while it is quarantined or lost.
type Ledger struct {
	mu          sync.Mutex            // guards grants and quarantined
	grants      map[string]string     // GPU UUID -> job ID
	quarantined map[string]Quarantine // GPU UUID -> its fault
	links       map[string][]gpu.Link // GPU UUID -> its links; set once, before any Grant
	mig         map[string]migSlot    // MIG instance UUID -> where it is (mig.go); set with links
	migOn       map[string]bool       // GPU UUID -> MIG mode is on; set with links
	// edge, when set, is told the GPUs a Grant took or a Release freed,
	// after the change (Config.GrantEdge).
	edge func(uuids ...string)
	// held is what others than jobs hold, by source (SetHeld).
	held map[string][]alloc.Grant
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{grants: map[string]string{}, quarantined: map[string]Quarantine{}}
}

// Grant gives job the GPUs that want asks for, from gpus (the latest
// telemetry), and returns their UUIDs in index order. Of more free GPUs
// than a count asks, Place picks (cool, unthrottled, NVLinked). A GPU is free when no
// other job holds it, external (UUIDs used by processes outside labpool)
// does not name it, and it is neither quarantined nor lost. Asking for
// nothing grants nothing. A job asking again keeps what it holds and may
// take more. Asking for a quarantined or lost GPU by index is refused
// (*RefusedError naming the fault: waiting would not help); a count skips
// such GPUs.
func (l *Ledger) Grant(job string, want Request, gpus []gpu.Stats, external map[string]bool) ([]string, error) {
	n := want.want()
	if n == 0 {
		return []string{}, nil
	}
	var chosen []string
	defer func() { l.tell(chosen) }() // after the unlock below
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refuseFaulty(job, want, gpus); err != nil {
		return nil, err
	}
	if len(want.MIG) > 0 {
		return l.grantMIG(job, want.MIG, gpus)
	}
	var free []Candidate
	var busy []BusyGPU
	for _, g := range gpus {
		if len(want.Indexes) > 0 && !slices.Contains(want.Indexes, g.Index) {
			continue
		}
		if b, ok := l.busy(job, g, want.MinMemBytes, external); ok {
			busy = append(busy, b)
			continue
		}
		free = append(free, Candidate{Index: g.Index, UUID: g.UUID, TempC: g.TempC,
			Health: g.Health, HealthReason: g.HealthReason, Links: l.links[g.UUID]})
	}
	if len(free) < n {
		return nil, &BusyError{Want: n, Free: len(free), Total: len(gpus), Busy: busy}
	}
	picked, _ := Place(free, n) // the indexes asked are all free: Place takes them all
	chosen = make([]string, len(picked))
	for i, c := range picked {
		chosen[i] = c.UUID
	}
	for _, u := range chosen {
		l.grants[u] = job
	}
	return chosen, nil
}

// busy says why g cannot go to job, if it cannot. l.mu is held.
func (l *Ledger) busy(job string, g gpu.Stats, minMem uint64, external map[string]bool) (BusyGPU, bool) {
	b := BusyGPU{Index: g.Index, UUID: g.UUID}
	q, quarantined := l.quarantined[g.UUID]
	switch holder, held := l.grants[g.UUID]; {
	case held && holder != job:
		b.Job = holder
	case held:
		return b, false // job's own
	case g.Health == gpu.HealthLost:
		b.Lost, b.Reason = true, g.HealthReason
	case quarantined:
		b.Quarantined, b.Reason = true, q.Reason
	case l.migHeld(job, g.UUID) != "":
		b.Job = l.migHeld(job, g.UUID)
	case l.migOn[g.UUID]:
		b.MIGOn = true
	case external[g.UUID]:
		b.External = true
	case GPUMemFor(g.MemTotalBytes, g.MemUsedBytes, g.MemUnified) < minMem:
		b.TooSmall, b.MemBytes, b.Unified = true, GPUMemFor(g.MemTotalBytes, g.MemUsedBytes, g.MemUnified), g.MemUnified
	default:
		return b, false
	}
	return b, true
}

// SetTopology records how the GPUs of devs reach each other and their MIG
// instances, for Place to weigh and Grant to find: at start, and again
// when they change (the grants held stay).
func (l *Ledger) SetTopology(devs []gpu.Info) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.links = make(map[string][]gpu.Link, len(devs))
	l.mig, l.migOn = map[string]migSlot{}, map[string]bool{}
	for _, d := range devs {
		l.links[d.UUID] = d.Links
		if d.MIG == nil || !d.MIG.Enabled {
			continue
		}
		l.migOn[d.UUID] = true
		for _, in := range d.MIG.Instances {
			l.mig[in.UUID] = migSlot{GPU: d.UUID, Index: d.Index, MemBytes: in.MemTotalBytes}
		}
	}
}

// Restore records GPUs a running job already holds (re-adoption). A GPU
// that another job holds stays with it; Restore returns those conflicts.
func (l *Ledger) Restore(job string, uuids []string) (conflicts []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range uuids {
		if holder, ok := l.grants[u]; ok && holder != job {
			conflicts = append(conflicts, u)
			continue
		}
		l.grants[u] = job
	}
	return conflicts
}

// Release frees the GPUs of job.
func (l *Ledger) Release(job string) {
	var freed []string
	defer func() { l.tell(freed) }() // after the unlock below
	l.mu.Lock()
	defer l.mu.Unlock()
	for u, j := range l.grants {
		if j == job {
			delete(l.grants, u)
			freed = append(freed, u)
		}
	}
}

// tell passes the GPUs that changed hands to l.edge, if any.
func (l *Ledger) tell(uuids []string) {
	if l.edge != nil && len(uuids) > 0 {
		l.edge(uuids...)
	}
}

// Granted returns a copy of the grants, GPU UUID -> job ID. A granted MIG
// instance also names its GPU as held (by the job of the first instance
// in UUID order, where several jobs share it): its processes are theirs.
func (l *Ledger) Granted() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.grants))
	for u, j := range l.grants {
		out[u] = j
	}
	l.grantMIGParents(out)
	return out
}

// refuseFaulty refuses a request naming, by index, a GPU that is
// quarantined or lost and not already job's. l.mu is held.
func (l *Ledger) refuseFaulty(job string, want Request, gpus []gpu.Stats) error {
	for _, g := range gpus {
		if !slices.Contains(want.Indexes, g.Index) || l.grants[g.UUID] == job && job != "" {
			continue
		}
		if q, ok := l.quarantined[g.UUID]; ok {
			return refuse("quarantined GPU", "gpu %d quarantined: %s (an owner clears it with `labpool gpu clear NODE:%d`)", g.Index, q.Reason, g.Index)
		}
		if g.Health == gpu.HealthLost {
			return refuse("lost GPU", "gpu %d lost: %s", g.Index, g.HealthReason)
		}
	}
	return nil
}

// Quarantine keeps q.UUID from new jobs; it reports whether the GPU was not
// quarantined already (a job holding it keeps it until it ends).
func (l *Ledger) Quarantine(q Quarantine) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.quarantined[q.UUID]; ok {
		return false
	}
	l.quarantined[q.UUID] = q
	return true
}

// Requarantine updates the fault of a quarantined GPU when NVML names
// another one (an XID after the ECC errors it came with, say); it reports
// whether the reason changed. The quarantine keeps its start.
func (l *Ledger) Requarantine(q Quarantine) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	old, ok := l.quarantined[q.UUID]
	if !ok || old.Reason == q.Reason {
		return false
	}
	old.Reason, old.Index = q.Reason, q.Index
	l.quarantined[q.UUID] = old
	return true
}

// Unquarantine lets new jobs have the GPU again; it returns the quarantine
// lifted, and false when there was none.
func (l *Ledger) Unquarantine(uuid string) (Quarantine, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, ok := l.quarantined[uuid]
	delete(l.quarantined, uuid)
	return q, ok
}

// Quarantined returns the quarantine of a GPU, if it has one.
func (l *Ledger) Quarantined(uuid string) (Quarantine, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, ok := l.quarantined[uuid]
	return q, ok
}

// Quarantines lists the quarantined GPUs, by index.
func (l *Ledger) Quarantines() []Quarantine {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Quarantine, 0, len(l.quarantined))
	for _, q := range l.quarantined {
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b Quarantine) int { return a.Index - b.Index })
	return out
}

// SetHeld replaces the grants that source (say "reservations" or "lend")
// holds on this machine's GPUs, beside the jobs': a GPU that such a grant
// holds at the time of a Grant goes to no other holder (see alloc.Fit).
func (l *Ledger) SetHeld(source string, gs []alloc.Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string][]alloc.Grant{}
	}
	l.held[source] = slices.Clone(gs)
}

// Held returns every grant that SetHeld gave, by source.
func (l *Ledger) Held() map[string][]alloc.Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]alloc.Grant, len(l.held))
	for s, gs := range l.held {
		out[s] = slices.Clone(gs)
	}
	return out
}
