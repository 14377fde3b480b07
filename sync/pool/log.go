package pool

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Log holds the accepted records of one pool and the state derived from
// them: members with their roles, and invites. Every replica that holds
// the same records derives the same state, because records are judged in
// (Version, Hash) order: a record that arrives late is slotted into place
// and the records after it are judged again (those it makes invalid, such
// as a change signed by an admin it removed earlier, are dropped).
//
// A Log is not safe for concurrent use.
type Log struct {
	pool    ID
	recs    []Record   // accepted, in (Version, Hash) order
	hashes  [][32]byte // of recs, index for index
	held    map[[32]byte]bool
	creator string // device ID of the genesis, "" before it
	members map[string]*MemberState
	invites map[string]*InviteState
	clock   uint64 // the highest version ever accepted
}

// MemberState is a device as the log knows it, removed ones included.
type MemberState struct {
	ID      string
	Name    string
	Role    Role
	Removed bool
	Invite  string // the invite it joined with, "" for the creator
	AddedAt time.Time
	AddedBy string // the device that made that invite (the creator: itself)
	Version uint64 // of its latest record
	Key     []byte // its Ed25519 public key
}

// NewLog returns an empty log for pool: it accepts a genesis first.
func NewLog(pool ID) *Log {
	return &Log{
		pool:    pool,
		held:    map[[32]byte]bool{},
		members: map[string]*MemberState{},
		invites: map[string]*InviteState{},
	}
}

// Pool returns the pool's ID.
func (l *Log) Pool() ID { return l.pool }

// Creator returns the device ID of the pool's creator, "" before the genesis.
func (l *Log) Creator() string { return l.creator }

// NextVersion returns the version for a new record: now in unix ms, or
// above every version accepted if that is higher.
func (l *Log) NextVersion(now time.Time) uint64 {
	return max(unixMS(now), l.clock+1)
}

// Apply checks r and, if every rule allows it, adds it to the log. It
// returns changed=false and no error for a record already held. A refusal
// wraps ErrForged, ErrReplayed, ErrOutOfRole, ErrFuture, ErrInvite,
// ErrRemoved, ErrNoMember, ErrNoGenesis or ErrMalformed with the rule.
func (l *Log) Apply(r Record, now time.Time) (changed bool, err error) {
	h := r.Hash()
	if l.held[h] {
		return false, nil
	}
	if err := l.checkFresh(&r); err != nil {
		return false, err
	}
	if n := len(l.recs); n == 0 || compareKey(r.Version, h, l.recs[n-1].Version, l.hashes[n-1]) > 0 {
		if err := l.check(&r, now, true); err != nil {
			return false, err
		}
		l.add(r, h)
		return true, nil
	}
	return l.insert(r, h, now)
}

// insert judges r, which sorts before records already held, at its place,
// and judges again every record after it, on a copy of the state: the
// copy replaces l only if r is accepted.
func (l *Log) insert(r Record, h [32]byte, now time.Time) (bool, error) {
	at := len(l.recs)
	for at > 0 && compareKey(l.recs[at-1].Version, l.hashes[at-1], r.Version, h) > 0 {
		at--
	}
	n := NewLog(l.pool)
	n.clock = l.clock
	replay := func(x Record, hx [32]byte) error {
		if err := n.check(&x, now, !l.held[hx]); err != nil {
			return err
		}
		n.add(x, hx)
		return nil
	}
	for i := range at {
		if err := replay(l.recs[i], l.hashes[i]); err != nil {
			return false, fmt.Errorf("replay record %d: %w", i, err) // cannot happen: it was accepted in this order
		}
	}
	if err := replay(r, h); err != nil {
		return false, err
	}
	for i := at; i < len(l.recs); i++ {
		_ = replay(l.recs[i], l.hashes[i]) // dropped: r, before it, makes it invalid
	}
	*l = *n
	return true, nil
}

// compareKey orders records by version, then hash.
func compareKey(va uint64, ha [32]byte, vb uint64, hb [32]byte) int {
	if c := cmp.Compare(va, vb); c != 0 {
		return c
	}
	return bytes.Compare(ha[:], hb[:])
}

// add appends r, already checked, and updates the state.
func (l *Log) add(r Record, h [32]byte) {
	l.recs = append(l.recs, r)
	l.hashes = append(l.hashes, h)
	l.held[h] = true
	l.clock = max(l.clock, r.Version)
	at := time.UnixMilli(int64(r.Version))
	switch r.Kind {
	case KindGenesis:
		l.creator = r.Subject
		l.members[r.Subject] = &MemberState{ID: r.Subject, Name: r.Name, Role: RoleOwner,
			AddedAt: at, AddedBy: r.Subject, Version: r.Version, Key: r.Key}
	case KindJoin:
		inv := l.invites[r.Invite]
		inv.Used++
		l.members[r.Subject] = &MemberState{ID: r.Subject, Name: r.Name, Role: inv.Role, Invite: r.Invite,
			AddedAt: at, AddedBy: inv.CreatedBy, Version: r.Version, Key: r.Key}
	case KindRole:
		m := l.members[r.Subject]
		m.Role, m.Version = r.Role, r.Version
		l.revokeInvitesOf(r.Subject, r.Role, false)
	case KindRemove:
		m := l.members[r.Subject]
		m.Removed, m.Version = true, r.Version
		l.revokeInvitesOf(r.Subject, m.Role, true)
		if inv, ok := l.invites[r.Invite]; ok && r.Signer != r.Subject {
			inv.Revoked = true // the door it came in by closes behind it
		}
	case KindInvite:
		l.invites[r.Subject] = &InviteState{ID: r.Subject, Role: r.Role, Uses: r.Uses,
			Expires: time.UnixMilli(r.Expires), CreatedBy: r.Signer, CreatedAt: at, Key: r.Key, Version: r.Version}
	case KindRevoke:
		inv := l.invites[r.Subject]
		inv.Revoked, inv.revokeHeld, inv.Version = true, true, r.Version
	}
}

// Verify checks a whole log, as a joiner does with what a member sent: it
// judges the records in (Version, Hash) order and returns the log if each
// one is accepted and the genesis makes pool; otherwise the first record
// refused, with the rule.
func Verify(pool ID, recs []Record, now time.Time) (*Log, error) {
	type keyed struct {
		r Record
		h [32]byte
	}
	sorted := make([]keyed, len(recs))
	for i, r := range recs {
		sorted[i] = keyed{r, r.Hash()}
	}
	slices.SortFunc(sorted, func(a, b keyed) int { return compareKey(a.r.Version, a.h, b.r.Version, b.h) })
	l := NewLog(pool)
	for _, k := range sorted {
		if l.held[k.h] {
			continue
		}
		if err := l.check(&k.r, now, true); err != nil {
			return nil, fmt.Errorf("verify pool %s: %s record of %s, version %d: %w", pool, k.r.Kind, short(k.r.Subject), k.r.Version, err)
		}
		l.add(k.r, k.h)
	}
	if l.creator == "" {
		return nil, fmt.Errorf("verify pool %s: %w", pool, ErrNoGenesis)
	}
	return l, nil
}

// Records returns every accepted record in (Version, Hash) order: what is
// sent to peers. The records share their byte slices with the log.
func (l *Log) Records() []Record { return slices.Clone(l.recs) }

// Member returns the device with ID id (its text form), removed or not.
func (l *Log) Member(id string) (MemberState, bool) {
	m, ok := l.members[id]
	if !ok {
		return MemberState{}, false
	}
	return *m, true
}

// Members returns every device, removed ones included, sorted by ID.
func (l *Log) Members() []MemberState {
	all := make([]MemberState, 0, len(l.members))
	for _, m := range l.members {
		all = append(all, *m)
	}
	slices.SortFunc(all, func(a, b MemberState) int { return strings.Compare(a.ID, b.ID) })
	return all
}

func sortInvites(all []InviteState) {
	slices.SortFunc(all, func(a, b InviteState) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Check reports whether Apply would accept r now, judged against the
// current state, without changing the log.
func (l *Log) Check(r Record, now time.Time) error {
	if l.held[r.Hash()] {
		return refuse(ErrReplayed, "record is already held")
	}
	if err := l.checkFresh(&r); err != nil {
		return err
	}
	return l.check(&r, now, true)
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
	if m, ok := l.members[subject]; ok {
		r.Invite = m.Invite
	}
	if id, err := signerID(key); err == nil && id == subject {
		r.Invite = ""
	}
	return l.newRecord(key, r, now)
}

// NewJoin makes the record by which the device of joinerPub, named name,
// joins with code, for a joiner that holds the verified log: the role is
// the invite's, the version from the log's clock.
func (l *Log) NewJoin(code Code, joinerPub ed25519.PublicKey, name string, now time.Time) (Record, error) {
	if code.Pool != l.pool {
		return Record{}, fmt.Errorf("make join: code of pool %s, not %s: %w", code.Pool, l.pool, ErrForged)
	}
	id := InviteID(InviteKey(code.Secret).Public().(ed25519.PublicKey))
	inv, ok := l.invites[id]
	if !ok {
		return Record{}, fmt.Errorf("make join: %w", refuse(ErrUnknownInvite, "invite %s", id))
	}
	r, err := newJoin(code, joinerPub, name, inv.Role, time.UnixMilli(int64(l.NextVersion(now))))
	if err != nil {
		return Record{}, err
	}
	if err := l.CheckJoin(r, now); err != nil {
		return Record{}, fmt.Errorf("make join: %w", err)
	}
	return r, nil
}

// newRecord fills in r's pool, version and signer, signs it with key, and
// checks it.
func (l *Log) newRecord(key ed25519.PrivateKey, r Record, now time.Time) (Record, error) {
	signer, err := signerID(key)
	if err != nil {
		return Record{}, fmt.Errorf("make %s record: %w", r.Kind, err)
	}
	r.Pool, r.Version, r.Signer = l.pool, l.NextVersion(now), signer
	r.Sig = ed25519.Sign(key, r.SigningBytes())
	if err := l.Check(r, now); err != nil {
		return Record{}, fmt.Errorf("make %s record: %w", r.Kind, err)
	}
	return r, nil
}

// Clone returns a copy of l that shares nothing mutable with it, e.g. to
// try records before applying them for real.
func (l *Log) Clone() *Log {
	c := *l
	c.recs = slices.Clone(l.recs)
	c.hashes = slices.Clone(l.hashes)
	c.held = make(map[[32]byte]bool, len(l.held))
	for h := range l.held {
		c.held[h] = true
	}
	c.members = make(map[string]*MemberState, len(l.members))
	for id, m := range l.members {
		mm := *m
		c.members[id] = &mm
	}
	c.invites = make(map[string]*InviteState, len(l.invites))
	for id, inv := range l.invites {
		ii := *inv
		c.invites[id] = &ii
	}
	return &c
}
