package jobs

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// Request is the GPUs a job asks for: a count, or indexes, each with at
// least MinMemBytes of memory; MIG instances by UUID, or a count of them
// by Profile; or, with Share, that fraction of Count (1) GPUs, its memory
// capped at MemBytes.
type Request struct {
	Count       int
	Indexes     []int
	MIG         []string // MIG instances by UUID (mig.go)
	Profile     string   // Count MIG instances of this profile ("3g.40gb")
	MinMemBytes uint64
	Share       float64 // in (0, 1): a share of a GPU (see alloc.Request)
	MemBytes    uint64  // a share's memory cap
	// Owner and Name are the job's owner (device ID) and name: a
	// reservation lets its own member's jobs in, and a refusal names them.
	Owner, Name string
	// Limit is the job's time limit (0: none): it ends before a
	// reservation ahead on a GPU, or that GPU is passed over.
	Limit time.Duration
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

// Ledger records who holds each GPU and MIG instance of this machine, as
// alloc.Grants: the jobs', and what others hold (SetHeld: reservations,
// the lender's own use). Every grant is decided by alloc.Fit, so a GPU
// goes to one job at a time (or to shares adding up to at most one),
// never while processes outside labpool use it, nor while it is
// quarantined, lost or in MIG mode (its instances are granted instead).
type Ledger struct {
	mu          sync.Mutex             // guards everything below but edge and clock
	jobs        map[string]alloc.Grant // job ID -> its grant
	quarantined map[string]Quarantine  // GPU UUID -> its fault
	links       map[string][]gpu.Link  // GPU UUID -> its links; set once, before any Grant
	mig         map[string]migSlot     // MIG instance UUID -> where it is (mig.go); set with links
	migOrder    []string               // the MIG instances in GPU index order; set with links
	migOn       map[string]bool        // GPU UUID -> MIG mode is on; set with links
	// edge, when set, is told the GPUs a Grant took or a Release freed,
	// after the change (Config.GrantEdge).
	edge func(uuids ...string)
	// held is what others than jobs hold, by source (SetHeld).
	held map[string][]alloc.Grant
	// kept is what queued jobs that waited past StarveAfter keep, job ID
	// -> an alloc.Queued grant (Rekeep).
	kept map[string]alloc.Grant
	// onHeld, when set, is called after SetHeld changed what others hold
	// (the manager tries its queue: a grant given back may let a job in).
	onHeld func()
	// changed receives a value after any grant, release or SetHeld
	// (Changes): whoever publishes the ledger writes it again.
	changed chan struct{}
	// clock is the time grants are decided at (tests set it).
	clock func() time.Time
	// person, when set, maps a device to its person: Fit sees a holder's
	// person, so that what a reservation or an owner keeps for a person
	// is theirs from any of their devices.
	person func(string) string
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{jobs: map[string]alloc.Grant{}, quarantined: map[string]Quarantine{}, clock: time.Now, changed: make(chan struct{}, 1)}
}

// Grant gives job the GPUs (or MIG instances, or a share) that want asks
// for, from gpus (the latest telemetry), as alloc.Fit decides on this
// machine's units and every grant here, and returns their UUIDs. Of more
// free GPUs than a count asks, Place picks (cool, unthrottled,
// NVLinked); shares pack onto a GPU already shared. external names the
// GPUs that processes outside labpool use. Asking for nothing grants
// nothing. A job asking again keeps what it holds and may take more.
// Asking for a quarantined or lost GPU by index, or for MIG instances
// this machine lacks, is refused (*RefusedError naming the rule: waiting
// would not help); a count skips such GPUs. A GPU that isn't free is
// named in a *BusyError.
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
	stats := make(map[string]gpu.Stats, len(gpus))
	for _, g := range gpus {
		stats[g.UUID] = g
	}
	r, total, err := l.request(job, want, gpus, stats)
	if err != nil {
		return nil, err
	}
	now := l.clock()
	if want.Limit > 0 {
		r.Until = now.Add(want.Limit)
	}
	d := l.fit(l.unitsLocked(gpus), l.grantsFor(job, external), r, now)
	if !d.Fits {
		return nil, l.busyError(d, n, total, stats)
	}
	g := d.Grant(r.Holder, now, r.Until)
	if old, ok := l.jobs[job]; ok {
		g.From, g.Units = old.From, union(old.Units, g.Units)
	}
	l.jobs[job] = g
	delete(l.kept, job) // what it kept while it starved is its grant now
	for _, u := range d.Units {
		chosen = append(chosen, u.ID)
	}
	return slices.Clone(chosen), nil
}

// request is want as alloc.Fit reads it, and how many units of its kind
// this machine has. l.mu is held.
func (l *Ledger) request(job string, want Request, gpus []gpu.Stats, stats map[string]gpu.Stats) (alloc.Request, int, error) {
	r := alloc.Request{Holder: alloc.Holder{Kind: alloc.Job, ID: job, Member: want.Owner, Name: want.Name}, MemBytes: want.MinMemBytes}
	total := len(gpus)
	switch {
	case len(want.MIG) > 0:
		if err := l.refuseMIG(want.MIG, stats); err != nil {
			return r, 0, err
		}
		r.Units, total = want.MIG, len(l.mig)
	case want.Profile != "":
		have := l.profileCount(want.Profile)
		if have < want.Count {
			return r, 0, refuse("mig profile", "%d MIG instances of profile %s asked: this machine has %d (labpool gpus lists them)", want.Count, want.Profile, have)
		}
		r.Profile, r.Count, total = want.Profile, want.Count, have
	case len(want.Indexes) > 0:
		for _, g := range gpus {
			if slices.Contains(want.Indexes, g.Index) {
				r.Units = append(r.Units, g.UUID)
			}
		}
		if len(r.Units) < len(want.Indexes) {
			return r, 0, refuse("gpus", "GPUs %v asked: only %d of them are read now", want.Indexes, len(r.Units))
		}
		r.Pick = l.place(stats)
	default:
		r.Count, r.Pick = want.Count, l.place(stats)
	}
	if want.Share > 0 && want.Share < 1 {
		r.Share, r.MemBytes, r.Pick = want.Share, want.MemBytes, nil // shares pack (alloc.Fit)
	}
	return r, total, nil
}

// place picks n of the free GPUs as Place does: cool, unthrottled,
// NVLinked. stats are the GPUs' readings by UUID.
func (l *Ledger) place(stats map[string]gpu.Stats) func([]alloc.Unit, int) []alloc.Unit {
	return func(free []alloc.Unit, n int) []alloc.Unit {
		cs := make([]Candidate, len(free))
		byID := make(map[string]alloc.Unit, len(free))
		for i, u := range free {
			g := stats[u.ID]
			cs[i] = Candidate{Index: u.Index, UUID: u.ID, TempC: g.TempC, Health: g.Health, HealthReason: g.HealthReason, Links: l.links[u.ID]}
			byID[u.ID] = u
		}
		picked, _ := Place(cs, n)
		out := make([]alloc.Unit, len(picked))
		for i, c := range picked {
			out[i] = byID[c.UUID]
		}
		return out
	}
}

// union is a's units and those of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, u := range b {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// SetTopology records how the GPUs of devs reach each other and their MIG
// instances, for Place to weigh and Grant to find: at start, and again
// when they change (the grants held stay).
func (l *Ledger) SetTopology(devs []gpu.Info) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.links = make(map[string][]gpu.Link, len(devs))
	l.mig, l.migOn, l.migOrder = map[string]migSlot{}, map[string]bool{}, nil
	for _, d := range devs {
		l.links[d.UUID] = d.Links
		if d.MIG == nil || !d.MIG.Enabled {
			continue
		}
		l.migOn[d.UUID] = true
		for _, in := range d.MIG.Instances {
			l.mig[in.UUID] = migSlot{GPU: d.UUID, Index: d.Index, MemBytes: in.MemTotalBytes, Profile: migProfile(in.Name)}
			l.migOrder = append(l.migOrder, in.UUID)
		}
	}
	slices.SortStableFunc(l.migOrder, func(a, b string) int { return l.mig[a].Index - l.mig[b].Index })
}

// Restore records GPUs a running job already holds whole (re-adoption).
// A GPU that another job holds stays with it; Restore returns those
// conflicts.
func (l *Ledger) Restore(job string, uuids []string) (conflicts []string) {
	return l.restore(alloc.Grant{Holder: alloc.Holder{Kind: alloc.Job, ID: job}, Units: uuids, From: l.clock()})
}

// restoreJob records what the running job j already holds: its GPUs,
// with the share and memory cap it was granted (re-adoption, a restart).
// It returns the GPUs that another job holds (whole, or with shares that
// leave too little): they stay with it.
func (l *Ledger) restoreJob(j Job) (conflicts []string) {
	g := alloc.Grant{Holder: alloc.Holder{Kind: alloc.Job, ID: j.ID, Member: j.Owner, Name: j.Name},
		Units: j.GPUs, Share: j.GPUShare, MemBytes: j.GPUMemBytes, From: l.clock()}
	if j.Started != nil {
		g.From = *j.Started
	}
	if j.Spec.TimeLimitSeconds > 0 {
		g.Until = g.From.Add(time.Duration(j.Spec.TimeLimitSeconds) * time.Second)
	}
	return l.restore(g)
}

// restore adds g's units to its job's grant, but those another job holds.
func (l *Ledger) restore(g alloc.Grant) (conflicts []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	share := g.Share
	if share <= 0 || share >= 1 {
		share = 1
	}
	var kept []string
	for _, u := range g.Units {
		if l.sharedBy(g.Holder.ID, u)+share > 1+1e-9 {
			conflicts = append(conflicts, u)
			continue
		}
		kept = append(kept, u)
	}
	old, ok := l.jobs[g.Holder.ID]
	if ok {
		g.From, kept = old.From, union(old.Units, kept)
	}
	if len(kept) == 0 {
		return conflicts
	}
	g.Units = kept
	l.jobs[g.Holder.ID] = g
	return conflicts
}

// sharedBy is how much of unit u jobs other than job hold (1: whole).
// l.mu is held.
func (l *Ledger) sharedBy(job, u string) float64 {
	var sum float64
	for id, g := range l.jobs {
		if id == job || !slices.Contains(g.Units, u) {
			continue
		}
		if g.Share <= 0 || g.Share >= 1 {
			return 1
		}
		sum += g.Share
	}
	return sum
}

// Release frees the GPUs of job, and what it kept as a starving queued
// job.
func (l *Ledger) Release(job string) {
	var freed []string
	defer func() { l.tell(freed) }() // after the unlock below
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.jobs[job]; ok {
		freed = g.Units
		delete(l.jobs, job)
	}
	delete(l.kept, job)
}

// tell passes the GPUs that changed hands to l.edge, if any.
func (l *Ledger) tell(uuids []string) {
	if len(uuids) == 0 {
		return
	}
	l.signal()
	if l.edge != nil {
		l.edge(uuids...)
	}
}

// signal says on changed that the grants changed.
func (l *Ledger) signal() {
	select {
	case l.changed <- struct{}{}:
	default: // one pending says it all
	}
}

// Changes receives a value after the grants changed (at most one
// pending): a grant, a release, what others hold.
func (l *Ledger) Changes() <-chan struct{} { return l.changed }

// Granted returns who holds each GPU, GPU UUID -> job ID: of several
// jobs holding shares of one GPU, the first in ID order. A granted MIG
// instance also names its GPU as held (by the job of the first instance
// in UUID order, where several jobs share it): its processes are theirs.
func (l *Ledger) Granted() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string, len(l.jobs))
	for _, id := range slices.Sorted(maps.Keys(l.jobs)) {
		for _, u := range l.jobs[id].Units {
			if out[u] == "" {
				out[u] = id
			}
		}
	}
	l.grantMIGParents(out)
	return out
}

// JobGrant returns the grant job holds, if any: its units, and its share
// and memory cap when it holds a share.
func (l *Ledger) JobGrant(job string) (alloc.Grant, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.jobs[job]
	g.Units = slices.Clone(g.Units)
	return g, ok
}

// share is the share of a GPU job holds and its memory cap (0, 0: it
// holds its GPUs whole, or none).
func (l *Ledger) share(job string) (float64, uint64) {
	g, _ := l.JobGrant(job)
	if g.Share <= 0 || g.Share >= 1 {
		return 0, 0
	}
	return g.Share, g.MemBytes
}

// Grants returns every grant on this machine: the jobs' (in ID order),
// then what SetHeld gave (by source).
func (l *Ledger) Grants() []alloc.Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grantsLocked(nil)
}

// Units returns what this machine offers alloc.Fit, from gpus (the latest
// telemetry): each GPU, and each MIG instance of a GPU in MIG mode.
func (l *Ledger) Units(gpus []gpu.Stats) []alloc.Unit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unitsLocked(gpus)
}

// refuseFaulty refuses a request naming, by index, a GPU that is
// quarantined or lost and not already job's. l.mu is held.
func (l *Ledger) refuseFaulty(job string, want Request, gpus []gpu.Stats) error {
	for _, g := range gpus {
		if !slices.Contains(want.Indexes, g.Index) || l.holds(job, g.UUID) && job != "" {
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
	defer l.signal() // after the unlock: the published units say which GPUs are down
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
	defer l.signal() // after the unlock: the published units say which GPUs are down
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
	defer l.signal() // after the unlock: the published units say which GPUs are down
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
	if l.held == nil {
		l.held = map[string][]alloc.Grant{}
	}
	l.held[source] = slices.Clone(gs)
	l.mu.Unlock()
	l.signal()
	if l.onHeld != nil {
		l.onHeld() // never under l.mu
	}
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
