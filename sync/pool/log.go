package pool

import (
	"bytes"
	"cmp"
	"container/heap"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"
)

// Log holds the accepted records of one pool and the membership they make.
//
// Records form a DAG: each names the heads of the log its signer saw
// (Record.Prev), so a record's ancestors are exactly the state its signer
// claims to have judged it by. Apply judges a record against the state of
// its ancestors alone, which is the same on every replica whatever else it
// holds, so a record accepted once is valid forever and is never dropped.
//
// The membership is resolved from the whole set (resolve.go): a removal,
// demotion or revocation takes the effect away from every record concurrent
// with it (neither ancestor nor descendant) that the restricted device
// signed or the revoked invite admitted. A signer's clock therefore grants
// nothing: a demoted admin who names an old state gets a record that
// replicas hold, relay and report as superseded, never one that acts.
// Clock versions only order records that nothing else orders.
//
// A record whose parents are not all held waits (bounded) until they are.
//
// A Log is not safe for concurrent use.
type Log struct {
	pool    ID
	entries []*entry // accepted, in arrival order (indices are stable)
	byHash  map[[32]byte]int
	pending map[[32]byte]waiting // valid in form, waiting for parents
	linked  bool                 // a linked record is held: no legacy record is accepted any more
	clock   uint64               // the highest version ever accepted
	st      *state               // the membership resolved from every entry
	dirty   bool                 // st is stale
	stale   int                  // records added since st was resolved (while dirty)
	pasts   map[string]*state    // the membership of states records named, by their parents (pastsCap)
	admits  map[string]int       // admissions held, by signer (a legacy join: its invite)
	used    map[string]int       // admissions held, by invite
}

// waiting is a record held back for its parents, and how it came.
type waiting struct {
	r       Record
	arrived time.Time // on this machine's clock
	fresh   bool      // received now, not replayed from the store or a member's whole log
}

// entry is one accepted record.
type entry struct {
	r       Record
	h       [32]byte
	idx     int    // in Log.entries
	parents []int  // entries it extends
	anc     bitset // every entry it extends, directly or not
	// Judged at acceptance against its ancestors' state:
	demotes bool // a role change to below the subject's role then
}

// MemberState is a device as the log knows it, removed ones included.
type MemberState struct {
	ID      string
	Name    string
	Role    Role // its person's
	Removed bool
	// Person is the ID of the person whose device it is (the device ID of
	// that person's first device); PersonName the person's name.
	Person, PersonName string
	Invite             string // the invite it joined with, "" for the creator
	AddedAt            time.Time
	AddedBy            string // the device that made that invite (the creator: itself)
	Version            uint64 // of its latest record
	Key                []byte // its Ed25519 public key
	// AdmittedBy is the member that signed its admission ("" for the
	// creator and legacy joins).
	AdmittedBy string

	setBy int // entry that set Role (-1: genesis or join)
}

// Bounds on what a log holds, so that no member can make another's grow
// without end.
const (
	maxPrev    = 64  // parents a record names
	maxPending = 512 // records waiting for their parents
	maxVoid    = 64  // superseded records held per signer
)

// Bounds on the growth of a log: variables so that tests can lower them.
var (
	// maxLog is the number of records a log holds; past it only the
	// restrictions of admins and owners (removals, demotions,
	// revocations) fit, in reserveAdmin more records, and past those the
	// owners' alone, in reserveOwner more: a log full of admissions cannot
	// keep an owner from removing whoever filled it.
	maxLog       = 10_000
	reserveAdmin = 1_000
	reserveOwner = 1_000
	// maxAdmitsAdmin and maxAdmitsMember bound the admissions one device
	// signs: an admin's or owner's, and a member's or viewer's (only logs
	// of before the rule that admins and owners admit hold those).
	maxAdmitsAdmin  = 1_000
	maxAdmitsMember = 32
	// maxInviteSlack is how many admissions past its uses an invite may
	// have: those made at once by members that did not see each other's.
	// An invite of unlimited uses (made before new invites had a limit)
	// admits at most MaxInviteUses.
	maxInviteSlack = 8
)

// MaxInviteUses is the most joins a new invite allows.
const MaxInviteUses = 1_000

// lateGrace is how long past its invite's expiry, on this machine's clock,
// an admission may arrive: the clocks of members differ by up to MaxSkew.
const lateGrace = MaxSkew

// NewLog returns an empty log for pool: it accepts a genesis first.
func NewLog(pool ID) *Log {
	return &Log{pool: pool, byHash: map[[32]byte]int{}, pending: map[[32]byte]waiting{}, st: newState(),
		admits: map[string]int{}, used: map[string]int{}}
}

// Pool returns the pool's ID.
func (l *Log) Pool() ID { return l.pool }

// Creator returns the device ID of the pool's creator, "" before the genesis.
func (l *Log) Creator() string { return l.state().creator }

// NextVersion returns the version for a new record: now in unix ms, or
// above every version accepted if that is higher.
func (l *Log) NextVersion(now time.Time) uint64 {
	return max(unixMS(now), l.clock+1)
}

// Heads returns the hex hashes of the records nothing else extends, sorted:
// the Prev of a record signed now.
func (l *Log) Heads() []string {
	extended := newBitset(len(l.entries))
	for _, e := range l.entries {
		for _, p := range e.parents {
			extended.set(p)
		}
	}
	var heads []*entry
	for _, e := range l.entries {
		if !extended.has(e.idx) {
			heads = append(heads, e)
		}
	}
	slices.SortFunc(heads, func(a, b *entry) int { return compareKey(b.r.Version, b.h, a.r.Version, a.h) })
	heads = heads[:min(len(heads), maxPrev)]
	out := make([]string, len(heads))
	for i, e := range heads {
		out[i] = hex.EncodeToString(e.h[:])
	}
	slices.Sort(out)
	return out
}

// Apply checks r, received now, and, if every rule allows it, adds it to
// the log, and then any record that waited for it. It returns changed=false
// and no error for a record already held, or one that waits for parents not
// held yet. A refusal wraps ErrForged, ErrReplayed, ErrOutOfRole, ErrFuture,
// ErrInvite, ErrRemoved, ErrNoMember, ErrNoGenesis or ErrMalformed with the
// rule.
//
// Received now, an admission is refused when its invite expired, by now,
// more than MaxSkew ago: a member cannot use an expired invite by naming a
// state from before its expiry. Restore applies records accepted before,
// which that rule judged when they arrived.
func (l *Log) Apply(r Record, now time.Time) (changed bool, err error) {
	return l.apply(r, now, true)
}

// Restore is Apply for a record this log, or the member whose log it
// verifies, accepted before (from the store, or a member's whole log): an
// expiry passed since does not refuse it.
func (l *Log) Restore(r Record, now time.Time) (changed bool, err error) {
	return l.apply(r, now, false)
}

func (l *Log) apply(r Record, now time.Time, fresh bool) (changed bool, err error) {
	h := r.Hash()
	if _, ok := l.byHash[h]; ok {
		return false, nil
	}
	if _, ok := l.pending[h]; ok {
		return false, nil
	}
	parents, missing, err := l.parentsOf(&r)
	if err != nil {
		return false, err
	}
	if missing {
		if err := l.checkForm(&r, now); err != nil {
			return false, err
		}
		if len(l.pending) >= maxPending {
			// Records that never find their parents cannot hold the room
			// for good: members relay every record again, so those that
			// do have parents come back.
			clear(l.pending)
		}
		l.pending[h] = waiting{r, now, fresh}
		return false, nil
	}
	if err := l.accept(waiting{r, now, fresh}, h, parents, now); err != nil {
		return false, err
	}
	l.drainPending(now)
	return true, nil
}

// Has reports whether the record of hash h is accepted.
func (l *Log) Has(h [32]byte) bool {
	_, ok := l.byHash[h]
	return ok
}

// Pending returns how many records wait for parents not held.
func (l *Log) Pending() int { return len(l.pending) }

// drainPending accepts the waiting records whose parents are all held now,
// until none is left that can be; a waiting record refused is forgotten.
func (l *Log) drainPending(now time.Time) {
	for progress := true; progress; {
		progress = false
		for h, w := range l.pending {
			parents, missing, err := l.parentsOf(&w.r)
			if missing {
				continue
			}
			delete(l.pending, h)
			if err == nil {
				err = l.accept(w, h, parents, now)
			}
			progress = progress || err == nil
		}
	}
}

// parentsOf returns the entries r extends, and whether some are not held.
// A legacy record extends every entry held (they are all legacy too).
func (l *Log) parentsOf(r *Record) (parents []int, missing bool, err error) {
	if r.Kind == KindGenesis {
		return nil, false, nil
	}
	if !r.Linked() {
		if l.linked {
			return nil, false, refuse(ErrReplayed, "a %s record of the legacy format, after the pool moved to linked records (every machine must run this version)", r.Kind)
		}
		for i := range l.entries {
			parents = append(parents, i)
		}
		return parents, false, nil
	}
	for _, p := range r.Prev {
		var h [32]byte
		if b, err := hex.DecodeString(p); err != nil || len(b) != 32 {
			return nil, false, refuse(ErrMalformed, "prev %s is not a record hash", quoteField(p))
		} else {
			copy(h[:], b)
		}
		i, ok := l.byHash[h]
		if !ok {
			missing = true
			continue
		}
		parents = append(parents, i)
	}
	return parents, missing, nil
}

// accept judges w.r, whose parents are all held, against the state of its
// ancestors and adds it.
func (l *Log) accept(w waiting, h [32]byte, parents []int, now time.Time) error {
	return l.judge(w, h, parents, now, true)
}

// judge judges w.r, whose parents are all held, against the state of its
// ancestors, and adds it if add is true.
func (l *Log) judge(w waiting, h [32]byte, parents []int, now time.Time, add bool) error {
	r := w.r
	if err := l.checkRoomForKind(&r); err != nil {
		return err
	}
	if err := l.checkForm(&r, now); err != nil {
		return err
	}
	if r.Kind == KindGenesis && len(l.entries) > 0 {
		return refuse(ErrReplayed, "the pool has its genesis already")
	}
	e := &entry{r: r, h: h, idx: len(l.entries), parents: parents, anc: newBitset(len(l.entries) + 1)}
	for _, p := range parents {
		pe := l.entries[p]
		e.anc.set(p)
		e.anc.or(pe.anc)
		if pe.r.Version > r.Version && r.Linked() {
			return refuse(ErrReplayed, "version %d is below that of record %x it extends (%d)", r.Version, pe.h[:4], pe.r.Version)
		}
	}
	if !r.Linked() && r.Kind != KindGenesis {
		if n := len(l.entries); n > 0 && compareKey(r.Version, h, l.entries[n-1].r.Version, l.entries[n-1].h) < 0 {
			return refuse(ErrReplayed, "a legacy %s record older than records held", r.Kind)
		}
	}
	past, extendsAll := l.stateOf(e.anc, parents)
	demotes, err := past.judge(&r, l.pool)
	if err != nil {
		return err
	}
	e.demotes = demotes
	if err := l.checkRoom(e, past); err != nil {
		return err
	}
	if err := l.checkAdmissionQuota(w, past); err != nil {
		return err
	}
	if err := l.checkVoidQuota(e); err != nil {
		return err
	}
	if !add {
		return nil
	}
	l.add(e, extendsAll)
	return nil
}

// add adds e, judged already. A record that extends every entry is
// concurrent with none: the membership is the one before it with its effect
// (resolve's steps change nothing else), so it is applied to the resolved
// state as it is, instead of resolving the whole log again.
func (l *Log) add(e *entry, extendsAll bool) {
	l.entries = append(l.entries, e)
	l.byHash[e.h] = e.idx
	l.clock = max(l.clock, e.r.Version)
	l.linked = l.linked || e.r.Linked()
	if e.r.Kind == KindJoin {
		l.admits[admitter(&e.r)]++
		l.used[e.r.Invite]++
	}
	if !extendsAll || l.dirty {
		l.dirty = true
		l.stale++
		return
	}
	if why := l.st.effect(e); why != "" {
		l.st.void[e.h] = why
	}
}

// admitter returns who signed an admission: its member, or for a legacy
// join its invite.
func admitter(r *Record) string {
	if r.Linked() {
		return r.Signer
	}
	return invitePrefix + r.Invite
}

// stateOf returns the membership the entries of anc, the ancestors of a
// record of parents, make: the log's own, already resolved, when anc holds
// every entry (a record that extends all the heads, the common case), which
// it reports. The membership of an older state is kept for the next record
// that names the same one: a flood of records naming one old state resolves
// it once. It is never changed: entries are immutable, and judging reads
// a state only.
func (l *Log) stateOf(anc bitset, parents []int) (st *state, all bool) {
	n := 0
	for _, w := range anc {
		n += bits.OnesCount64(w)
	}
	if n == len(l.entries) {
		return l.state(), true
	}
	key := make([]byte, 0, 4*len(parents))
	for _, p := range slices.Sorted(slices.Values(parents)) {
		key = binary.BigEndian.AppendUint32(key, uint32(p))
	}
	if st, ok := l.pasts[string(key)]; ok {
		return st, false
	}
	st = l.resolve(anc)
	if l.pasts == nil || len(l.pasts) >= pastsCap {
		l.pasts = map[string]*state{}
	}
	l.pasts[string(key)] = st
	return st, false
}

// pastsCap bounds the old states a log keeps resolved.
const pastsCap = 8

// checkForm applies the rules that need no state: the pool, the shape of
// the kind and the version against the clock.
func (l *Log) checkForm(r *Record, now time.Time) error {
	if r.Pool != l.pool {
		return refuse(ErrForged, "record of pool %s, not %s", r.Pool, l.pool)
	}
	if err := r.checkShape(); err != nil {
		return err
	}
	if len(r.Prev) > maxPrev {
		return refuse(ErrMalformed, "%d parents, more than %d", len(r.Prev), maxPrev)
	}
	if !slices.IsSorted(r.Prev) || len(slices.Compact(slices.Clone(r.Prev))) != len(r.Prev) {
		return refuse(ErrMalformed, "parents not sorted and unique")
	}
	if limit := unixMS(now.Add(MaxSkew)); r.Version > limit {
		return refuse(ErrFuture, "version %d is more than %s ahead of the clock", r.Version, MaxSkew)
	}
	return nil
}

// checkVoidQuota refuses a record of a signer that has maxVoid records
// without effect already: a restricted device cannot grow the log forever
// with records that name old states. It counts them in the membership as
// resolved at most maxVoid records ago: each record that names an old
// state would otherwise resolve the whole log again, and a signer gets at
// most maxVoid more records without effect in between.
func (l *Log) checkVoidQuota(e *entry) error {
	st := l.st
	if l.stale >= maxVoid {
		st = l.state()
	}
	if len(st.void) < maxVoid {
		return nil
	}
	n := 0
	for h := range st.void {
		if i, ok := l.byHash[h]; ok && l.entries[i].r.Signer == e.r.Signer {
			n++
		}
	}
	if n >= maxVoid {
		return refuse(ErrOutOfRole, "signer %s has %d records without effect already", short(e.r.Signer), n)
	}
	return nil
}

// state returns the membership resolved from every entry.
func (l *Log) state() *state {
	if l.dirty {
		all := newBitset(len(l.entries))
		for i := range l.entries {
			all.set(i)
		}
		l.st = l.resolve(all)
		l.dirty, l.stale = false, 0
	}
	return l.st
}

// order returns the entries of set in topological order: parents first,
// and among records nothing orders, by (version, hash).
func (l *Log) order(set bitset) []*entry {
	indeg := map[int]int{}
	children := map[int][]int{}
	var ready entryHeap
	for i := range l.entries {
		if !set.has(i) {
			continue
		}
		e := l.entries[i]
		n := 0
		for _, p := range e.parents {
			if set.has(p) {
				n++
				children[p] = append(children[p], i)
			}
		}
		indeg[i] = n
		if n == 0 {
			ready = append(ready, e)
		}
	}
	heap.Init(&ready)
	out := make([]*entry, 0, len(indeg))
	for ready.Len() > 0 {
		e := heap.Pop(&ready).(*entry)
		out = append(out, e)
		for _, c := range children[e.idx] {
			if indeg[c]--; indeg[c] == 0 {
				heap.Push(&ready, l.entries[c])
			}
		}
	}
	return out
}

type entryHeap []*entry

func (q entryHeap) Len() int { return len(q) }
func (q entryHeap) Less(i, j int) bool {
	return compareKey(q[i].r.Version, q[i].h, q[j].r.Version, q[j].h) < 0
}
func (q entryHeap) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *entryHeap) Push(x any)   { *q = append(*q, x.(*entry)) }
func (q *entryHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// compareKey orders records by version, then hash.
func compareKey(va uint64, ha [32]byte, vb uint64, hb [32]byte) int {
	if c := cmp.Compare(va, vb); c != 0 {
		return c
	}
	return bytes.Compare(ha[:], hb[:])
}

// concurrent reports whether neither of a and b extends the other.
func concurrent(a, b *entry) bool {
	return a != b && !a.anc.has(b.idx) && !b.anc.has(a.idx)
}

// Verify checks a whole log that a member accepted: it accepts the records
// parents first and returns the log if each one is accepted and the genesis
// makes pool; otherwise the first record refused, with the rule. A joiner
// checks the answer to its join the same way, its own admission judged as
// received now (Manager.checkAnswer).
func Verify(pool ID, recs []Record, now time.Time) (*Log, error) {
	return verify(pool, recs, now, nil)
}

// verify is Verify, where the records that received(r, its hash) reports
// are received now (Apply), not accepted before (Restore): the admission of
// a joiner, which the joiner judges by its clock as every member judges an
// admission it receives.
func verify(pool ID, recs []Record, now time.Time, received func(*Record, [32]byte) bool) (*Log, error) {
	l := NewLog(pool)
	type keyed struct {
		r Record
		h [32]byte
	}
	sorted := make([]keyed, len(recs))
	for i, r := range recs {
		sorted[i] = keyed{r, r.Hash()}
	}
	// Legacy records are accepted in version order; linked ones wait for
	// their parents, so any order of them does.
	slices.SortFunc(sorted, func(a, b keyed) int {
		if a.r.Linked() != b.r.Linked() {
			if a.r.Linked() {
				return 1
			}
			return -1
		}
		return compareKey(a.r.Version, a.h, b.r.Version, b.h)
	})
	for _, k := range sorted {
		fresh := received != nil && received(&k.r, k.h)
		if _, err := l.apply(k.r, now, fresh); err != nil {
			return nil, fmt.Errorf("verify pool %s: %s record of %s, version %d: %w", pool, k.r.Kind, short(k.r.Subject), k.r.Version, err)
		}
	}
	if l.Creator() == "" {
		return nil, fmt.Errorf("verify pool %s: %w", pool, ErrNoGenesis)
	}
	if len(l.pending) > 0 {
		return nil, fmt.Errorf("verify pool %s: %d records extend records not sent: %w", pool, len(l.pending), ErrMalformed)
	}
	return l, nil
}

// Records returns every accepted record, parents first: what is sent to
// peers. The records share their byte slices with the log.
func (l *Log) Records() []Record {
	all := newBitset(len(l.entries))
	for i := range l.entries {
		all.set(i)
	}
	ord := l.order(all)
	out := make([]Record, len(ord))
	for i, e := range ord {
		out[i] = e.r
	}
	return out
}

// Member returns the device with ID id (its text form), removed or not.
func (l *Log) Member(id string) (MemberState, bool) {
	st := l.state()
	m, ok := st.members[id]
	if !ok {
		return MemberState{}, false
	}
	return st.member(m), true
}

// Members returns every device, removed ones included, sorted by ID.
func (l *Log) Members() []MemberState {
	st := l.state()
	all := make([]MemberState, 0, len(st.members))
	for _, m := range st.members {
		all = append(all, st.member(m))
	}
	slices.SortFunc(all, func(a, b MemberState) int { return strings.Compare(a.ID, b.ID) })
	return all
}

// Superseded returns the records held without effect, each with why: the
// record a concurrent removal, demotion or revocation took it from.
func (l *Log) Superseded() map[[32]byte]string {
	st := l.state()
	out := make(map[[32]byte]string, len(st.void))
	for h, why := range st.void {
		out[h] = why
	}
	return out
}

func sortInvites(all []InviteState) {
	slices.SortFunc(all, func(a, b InviteState) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Check reports whether Apply would accept r now, judged against the state
// of the records it extends, without changing the log.
func (l *Log) Check(r Record, now time.Time) error {
	h := r.Hash()
	if _, ok := l.byHash[h]; ok {
		return refuse(ErrReplayed, "record is already held")
	}
	parents, missing, err := l.parentsOf(&r)
	if err != nil {
		return err
	}
	if missing {
		return refuse(ErrMalformed, "record extends records not held")
	}
	return l.judge(waiting{r, now, true}, h, parents, now, false)
}

// NewRole makes and signs, with key, the record that gives device subject
// the role role. It returns the rule that refuses it, if any.
func (l *Log) NewRole(key ed25519.PrivateKey, subject string, role Role, now time.Time) (Record, error) {
	return l.newRecord(key, Record{Kind: KindRole, Subject: subject, Role: role}, now)
}

// NewRemove makes and signs, with key, the record that removes device
// subject for good (or, signed by subject itself, makes it leave). A
// removal by another also revokes the invite the device joined with.
func (l *Log) NewRemove(key ed25519.PrivateKey, subject string, now time.Time) (Record, error) {
	r := Record{Kind: KindRemove, Subject: subject}
	if m, ok := l.state().members[subject]; ok {
		r.Invite = m.Invite
	}
	if id, err := signerID(key); err == nil && id == subject {
		r.Invite = ""
	}
	return l.newRecord(key, r, now)
}

// NewReadmit makes and signs, with key, an owner's or admin's, the record
// that takes back device subject, removed, as role: a member again under
// its name. It returns the rule that refuses it, if any.
func (l *Log) NewReadmit(key ed25519.PrivateKey, subject string, role Role, now time.Time) (Record, error) {
	return l.newRecord(key, Record{Kind: KindReadmit, Subject: subject, Role: role}, now)
}

// NewRules makes and signs, with key, an owner's, the record from which on
// only admins and owners sign admissions: every machine refuses a member's
// admission that extends it, and holds without effect one concurrent with
// it (a member naming a state from before it).
func (l *Log) NewRules(key ed25519.PrivateKey, now time.Time) (Record, error) {
	signer, err := signerID(key)
	if err != nil {
		return Record{}, fmt.Errorf("make rules record: %w", err)
	}
	return l.newRecord(key, Record{Kind: KindRules, Subject: signer, Role: RoleAdmin}, now)
}

// AdminsAdmit reports whether the log's rules let only admins and owners
// sign admissions (a rules record took effect).
func (l *Log) AdminsAdmit() bool { return l.state().rules != nil }

// newRecord fills in r's pool, parents, version and signer, signs it with
// key, and checks it.
func (l *Log) newRecord(key ed25519.PrivateKey, r Record, now time.Time) (Record, error) {
	signer, err := signerID(key)
	if err != nil {
		return Record{}, fmt.Errorf("make %s record: %w", r.Kind, err)
	}
	r.Pool, r.Version, r.Signer, r.Prev = l.pool, l.NextVersion(now), signer, l.Heads()
	r.Sig = ed25519.Sign(key, r.SigningBytes())
	if err := l.Check(r, now); err != nil {
		return Record{}, fmt.Errorf("make %s record: %w", r.Kind, err)
	}
	return r, nil
}

// Clone returns a copy of l that shares nothing mutable with it, e.g. to
// try records before applying them for real. Entries are immutable and
// shared.
func (l *Log) Clone() *Log {
	c := *l
	c.entries = slices.Clone(l.entries)
	c.byHash = make(map[[32]byte]int, len(l.byHash))
	for h, i := range l.byHash {
		c.byHash[h] = i
	}
	c.pending = maps.Clone(l.pending)
	c.admits, c.used = maps.Clone(l.admits), maps.Clone(l.used)
	c.st = l.state().clone() // the log's own state changes as records are added
	c.dirty, c.stale, c.pasts = false, 0, nil
	return &c
}

// bitset is a set of entry indices.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) has(i int) bool { return i/64 < len(b) && b[i/64]&(1<<(i%64)) != 0 }

func (b *bitset) set(i int) {
	for i/64 >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

func (b *bitset) or(o bitset) {
	for len(*b) < len(o) {
		*b = append(*b, 0)
	}
	for i, w := range o {
		(*b)[i] |= w
	}
}

// member returns a copy of m with its person's name.
func (st *state) member(m *MemberState) MemberState {
	c := *m
	if p, ok := st.persons[m.Person]; ok {
		c.PersonName = p.name
	}
	return c
}
