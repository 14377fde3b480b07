package pool

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// Settings the Manager keeps in the store.
const settingPoolID = schema.SettingPoolID

// Conditions the Manager's callers branch on.
var (
	ErrInPool    = errors.New("this machine is in a pool already")
	ErrNoMember  = errors.New("no such member")
	ErrAmbiguous = errors.New("matches more than one member")
	ErrNoInvite  = errors.New("no such invite")
	ErrNotFound  = errors.New("no member of the pool answered")
)

// DefaultInviteTTL is how long an invite lasts when none is asked; an
// invite is good for one join unless more are asked.
const DefaultInviteTTL = 24 * time.Hour

// CreateInviteUses is how many joins the pool's first invite allows: the
// machines of the lab, joining as members within DefaultInviteTTL.
const CreateInviteUses = 16

// saveTimeout bounds the save of records received: it runs under a context
// of its own, since the replication stream that brought them may end (or a
// watchdog cancel it) before the save, which would then repeat the ingest
// at every restart.
const saveTimeout = 30 * time.Second

// ingestTries is how often a relayed batch is applied to a copy of the log
// before it is applied under the lock: a record this device signs in the
// meantime makes the copy stale.
const ingestTries = 3

// ManagerConfig is what a Manager needs from the daemon it runs in.
// Identity, DB and Dial are required.
type ManagerConfig struct {
	Identity *peer.Identity
	Name     func() string // this device's name; nil means none
	DB       *store.DB
	// Dial reaches any device at addr (a stranger until the join proves
	// otherwise); transport.Endpoint.DialAny.
	Dial func(ctx context.Context, addr string) (*transport.Conn, error)
	// Candidates lists addresses of machines announcing poolID on the
	// local network; nil means none.
	Candidates func(poolID string) []string
	// Entered is told the pool this device is now in (to announce it).
	Entered func(poolID string) error
	// Hint tells the replica where a member was reached.
	Hint func(id, addr string)
	// Removed is called once for every device the log removes (locally or
	// as learned from a peer), after the change is stored. It must not block.
	Removed func(id peer.ID)
	// FindWait bounds how long Join looks for the pool on the network.
	FindWait time.Duration
	Now      func() time.Time // nil means time.Now
	Log      *slog.Logger     // nil means slog.Default()
}

// Manager owns this device's view of the pool: the signed membership log,
// its storage, joining, and the changes this device signs.
type Manager struct {
	cfg ManagerConfig
	key ed25519.PrivateKey
	db  *store.DB

	saveMu   sync.Mutex // held from a snapshot of the log until it is stored
	ingestMu sync.Mutex // one relayed batch is applied at a time
	mu       sync.Mutex // guards log, gen, raw, waiting, void, stored, dropped, gone, sum
	log      *Log       // nil: not in a pool
	gen      uint64     // counts the changes of log, so that a copy knows it is stale
	raw      map[[32]byte][]byte
	waiting  map[[32]byte][]byte // bytes of records the log holds back for their parents
	void     map[[32]byte]bool   // records without effect, logged once each
	stored   map[[32]byte]bool   // records the store holds
	dropped  map[[32]byte]bool   // records refused already, logged once each
	gone     map[string]bool     // devices whose removal was reported
	sum      uint64              // fingerprint of the records held

	testHookIngest func() // called while a relayed batch is applied to a copy of the log
}

// NewManager loads the pool this device is in, if any, from the store.
func NewManager(ctx context.Context, cfg ManagerConfig) (*Manager, error) {
	if cfg.Name == nil {
		cfg.Name = func() string { return "" }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.FindWait == 0 {
		cfg.FindWait = 10 * time.Second
	}
	key, ok := cfg.Identity.Cert.PrivateKey.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("pool manager: the device key is not Ed25519")
	}
	m := &Manager{cfg: cfg, key: key, db: cfg.DB, dropped: map[[32]byte]bool{}, gone: map[string]bool{},
		raw: map[[32]byte][]byte{}, waiting: map[[32]byte][]byte{}, void: map[[32]byte]bool{}, stored: map[[32]byte]bool{}}
	return m, m.load(ctx)
}

// load reads the log from the store and replays it.
func (m *Manager) load(ctx context.Context) error {
	idText, ok, err := m.db.Setting(ctx, settingPoolID)
	if err != nil || !ok {
		return err
	}
	id, err := ParseID(idText)
	if err != nil {
		return fmt.Errorf("stored pool id: %w", err)
	}
	rows, err := m.db.PoolRecords(ctx)
	if err != nil {
		return err
	}
	l := NewLog(id)
	now := m.cfg.Now()
	type stored struct {
		r    Record
		data []byte
	}
	var recs []stored
	for _, row := range rows {
		r, err := DecodeRecord(row.Data)
		if err != nil {
			m.cfg.Log.Warn("stored pool record unreadable", "hash", row.Hash, "err", err)
			continue
		}
		recs = append(recs, stored{r, row.Data})
	}
	// The legacy records of a pool that predates linked records first, in
	// version order (their order is their link), then the linked ones.
	slices.SortStableFunc(recs, func(a, b stored) int {
		if a.r.Linked() != b.r.Linked() {
			if a.r.Linked() {
				return 1
			}
			return -1
		}
		return compareRecords(a.r, b.r)
	})
	for _, s := range recs {
		if _, err := l.Restore(s.r, now); err != nil {
			m.cfg.Log.Warn("stored pool record refused", "hash", fmt.Sprintf("%x", s.r.Hash()), "err", err)
			continue
		}
		m.raw[s.r.Hash()] = s.data
		m.stored[s.r.Hash()] = true
	}
	for h := range l.Superseded() {
		m.void[h] = true // logged when they were voided
	}
	if l.Creator() == "" {
		m.cfg.Log.Warn("the stored pool has no valid genesis: this machine is in no pool", "pool", idText)
		return nil
	}
	m.mu.Lock()
	m.log = l
	m.resum()
	m.gone = m.removed()
	m.mu.Unlock()
	if err := m.setRules(ctx); err != nil {
		// The pool works as before; the next start tries again.
		m.cfg.Log.Warn("the pool's rules are not set", "err", err)
	}
	return nil
}

// setRules signs, on an owner's machine, the rules record of a pool made
// before it: from it on only admins and owners sign admissions. A pool
// made since holds one from its start.
func (m *Manager) setRules(ctx context.Context) error {
	m.mu.Lock()
	me, ok := m.log.Member(m.Self().String())
	done := m.log.AdminsAdmit()
	m.mu.Unlock()
	if done || !ok || me.Removed || me.Role != RoleOwner {
		return nil
	}
	err := m.sign(ctx, func(l *Log, now time.Time) ([]Record, error) {
		r, err := l.NewRules(m.key, now)
		return []Record{r}, err
	})
	if err != nil {
		return fmt.Errorf("set the pool's rules (only admins and owners admit): %w", err)
	}
	m.cfg.Log.Info("only admins and owners admit devices to the pool from now on: signed its rules record")
	return nil
}

// DecodeRecord reads one record from the network or the store.
func DecodeRecord(b []byte) (Record, error) {
	var r Record
	if err := decodeBounded(strings.NewReader(string(b)), maxRecordSize, &r); err != nil {
		return Record{}, fmt.Errorf("decode pool record: %w", err)
	}
	return r, nil
}

// Self returns this device's ID.
func (m *Manager) Self() peer.ID { return m.cfg.Identity.ID }

// PoolID returns the pool this device is in.
func (m *Manager) PoolID() (ID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return ID{}, false
	}
	return m.log.Pool(), true
}

// Role returns id's role, and false when id is not an active member.
func (m *Manager) Role(id peer.ID) (Role, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return "", false
	}
	ms, ok := m.log.Member(id.String())
	if !ok || ms.Removed {
		return "", false
	}
	return ms.Role, true
}

// State is a snapshot of the pool for display.
type State struct {
	Pool    ID
	Creator string
	Members []MemberState
	Invites []InviteState
}

// Snapshot returns the pool as this device knows it; ok is false outside a pool.
func (m *Manager) Snapshot() (State, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return State{}, false
	}
	return State{Pool: m.log.Pool(), Creator: m.log.Creator(), Members: m.log.Members(), Invites: m.log.Invites()}, true
}

// Records returns the signed records held, as sent to peers, and a
// fingerprint that changes whenever they do.
func (m *Manager) Records() ([]json.RawMessage, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.log == nil {
		return nil, 0
	}
	recs := m.log.Records()
	out := make([]json.RawMessage, 0, len(recs))
	for _, r := range recs {
		out = append(out, m.raw[r.Hash()])
	}
	return out, m.sum
}

func (m *Manager) resum() {
	h := fnv.New64a()
	for _, r := range m.log.Records() {
		sum := r.Hash()
		h.Write(sum[:])
	}
	m.sum = h.Sum64()
}

// Create makes a new pool with this device as its creator and the first
// device of its owner, the person named as ("" for the device's name), and
// its first invite (role member, DefaultInviteTTL, CreateInviteUses).
func (m *Manager) Create(ctx context.Context, as string) (InviteState, Code, error) {
	m.mu.Lock()
	if m.log != nil {
		id := m.log.Pool()
		if ms, ok := m.log.Member(m.Self().String()); ok && !ms.Removed {
			m.mu.Unlock()
			return InviteState{}, Code{}, fmt.Errorf("%w (%s): make a code for another machine with `labpool pool invite`", ErrInPool, id)
		}
		// Removed from it: the new pool's log replaces the old one.
		m.cfg.Log.Info("leaving the pool this machine was removed from", "pool", id.String())
		m.forgetLogLocked()
	}
	now := m.cfg.Now()
	g, err := NewGenesis(m.key, m.cfg.Name(), as, now)
	if err != nil {
		m.mu.Unlock()
		return InviteState{}, Code{}, err
	}
	l := NewLog(g.Pool)
	recs := []Record{g}
	_, err = l.Apply(g, now)
	if err == nil {
		// The pool's rules from its start: only admins and owners admit.
		var r Record
		if r, err = l.NewRules(m.key, now); err == nil {
			recs = append(recs, r)
			_, err = l.Apply(r, now)
		}
	}
	if err != nil {
		m.mu.Unlock()
		return InviteState{}, Code{}, fmt.Errorf("create pool: %w", err)
	}
	m.log = l
	m.gen++
	m.mu.Unlock()
	if err := m.forgetOthers(ctx); err != nil {
		return InviteState{}, Code{}, err
	}
	if err := m.commit(ctx, recs); err != nil {
		return InviteState{}, Code{}, err
	}
	if err := m.enter(ctx, g.Pool); err != nil {
		return InviteState{}, Code{}, err
	}
	m.cfg.Log.Info("created pool", "pool", g.Pool.String())
	return m.Invite(ctx, RoleMember, CreateInviteUses, DefaultInviteTTL)
}

// enter records the pool in the settings and announces it.
func (m *Manager) enter(ctx context.Context, id ID) error {
	if err := m.db.SetSetting(ctx, settingPoolID, id.String()); err != nil {
		return err
	}
	if m.cfg.Entered != nil {
		return m.cfg.Entered(id.String())
	}
	return nil
}

// sign applies records this device just signed; a refusal is returned as is.
func (m *Manager) sign(ctx context.Context, make func(l *Log, now time.Time) ([]Record, error)) error {
	m.mu.Lock()
	if m.log == nil {
		m.mu.Unlock()
		return ErrNotInPool
	}
	now := m.cfg.Now()
	recs, err := make(m.log, now)
	if err == nil {
		m.gen++
		for _, r := range recs {
			if _, err = m.log.Apply(r, now); err != nil {
				break
			}
		}
	}
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return m.commit(ctx, recs)
}

// commit stores the log after it accepted recs (which it holds now, or
// dropped again), rewrites the member table and reports removals.
func (m *Manager) commit(ctx context.Context, recs []Record) error {
	m.saveMu.Lock() // snapshots reach the store in the order they were taken
	defer m.saveMu.Unlock()
	m.mu.Lock()
	for _, r := range recs {
		if _, ok := m.raw[r.Hash()]; ok {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			m.mu.Unlock()
			return fmt.Errorf("encode pool record: %w", err)
		}
		m.raw[r.Hash()] = b
	}
	held := m.log.Records()
	rows := make([]store.PoolRecord, 0, len(held))
	raw := make(map[[32]byte][]byte, len(held))
	var fresh []Record
	for _, r := range held {
		h := r.Hash()
		if !m.stored[h] {
			m.stored[h] = true
			fresh = append(fresh, r)
		}
		data, ok := m.raw[h]
		if !ok {
			data, _ = json.Marshal(r)
		}
		raw[h] = data
		rows = append(rows, store.PoolRecord{Hash: hex.EncodeToString(h[:]), Version: r.Version, Data: data})
	}
	m.raw = raw
	members := memberRows(m.log.Members())
	m.resum()
	var voided []string
	for h, why := range m.log.Superseded() {
		if !m.void[h] {
			m.void[h] = true
			voided = append(voided, fmt.Sprintf("record %x: %s", h[:4], why))
		}
	}
	var newlyGone []string
	left := false
	removed := m.removed()
	for id := range m.gone {
		if !removed[id] {
			delete(m.gone, id) // readmitted: a later removal is reported again
		}
	}
	for id := range removed {
		if !m.gone[id] {
			m.gone[id] = true
			newlyGone = append(newlyGone, id)
			left = left || id == m.Self().String()
		}
	}
	m.mu.Unlock()
	for _, r := range fresh {
		h := r.Hash()
		m.cfg.Log.Debug("pool record accepted", "record", hex.EncodeToString(h[:4]), "kind", r.Kind, "subject", r.Subject, "signer", r.Signer)
	}
	for _, v := range voided {
		m.cfg.Log.Warn("a pool record is held without effect", "why", v)
	}
	if err := m.db.SavePool(ctx, rows, members); err != nil {
		return err
	}
	if left {
		if err := m.forgetOthers(ctx); err != nil {
			return err
		}
	}
	for _, id := range newlyGone {
		if m.cfg.Removed != nil {
			if pid, err := peer.ParseID(id); err == nil {
				m.cfg.Log.Info("device removed from the pool", "peer", pid)
				m.cfg.Removed(pid)
			}
		}
	}
	return nil
}

// forgetLogLocked forgets the log of the pool this device was removed
// from, before another pool's replaces it; m.mu is held.
func (m *Manager) forgetLogLocked() {
	m.stored, m.void, m.gone = map[[32]byte]bool{}, map[[32]byte]bool{}, map[string]bool{}
	m.waiting, m.dropped = map[[32]byte][]byte{}, map[[32]byte]bool{}
}

// forgetOthers forgets what this device's replica holds of other machines
// (store.ForgetOthers): it is out of their pool, or in another one now, so
// the old pool's machines, jobs, alerts and history leave every view. Its
// own records stay.
func (m *Manager) forgetOthers(ctx context.Context) error {
	n, err := m.db.ForgetOthers(ctx, m.Self().String())
	if err != nil {
		return err
	}
	if n > 0 {
		m.cfg.Log.Info("forgot the records of the machines of a pool this machine is not in", "records", n)
	}
	return nil
}

// removed returns the devices the log says are removed; m.mu is held.
func (m *Manager) removed() map[string]bool {
	out := map[string]bool{}
	if m.log == nil {
		return out
	}
	for _, ms := range m.log.Members() {
		if ms.Removed {
			out[ms.ID] = true
		}
	}
	return out
}

func memberRows(ms []MemberState) []store.MemberRow {
	rows := make([]store.MemberRow, 0, len(ms))
	for _, s := range ms {
		rows = append(rows, store.MemberRow{ID: s.ID, Name: s.Name, Version: s.Version, Removed: s.Removed,
			AddedAt: s.AddedAt, AddedBy: s.AddedBy, Role: string(s.Role), Person: s.Person, PersonName: s.PersonName})
	}
	return rows
}

// Receive applies records relayed by a member (from its replication
// stream): each is checked on its own; a forged, replayed or out-of-role
// one is dropped and logged once. The batch is applied to a copy of the
// log, without holding the lock that role checks take, and stored under a
// context of its own (saveTimeout): one that arrived is never lost to the
// end of the stream that brought it.
func (m *Manager) Receive(ctx context.Context, from peer.ID, raws []json.RawMessage) error {
	var items []item
	for _, raw := range raws {
		r, err := DecodeRecord(raw)
		if err != nil {
			m.dropOnce(sumOf(raw), from, err)
			continue
		}
		items = append(items, item{r, raw})
	}
	slices.SortFunc(items, func(a, b item) int { return compareRecords(a.r, b.r) }) // legacy ones in order
	m.ingestMu.Lock()
	defer m.ingestMu.Unlock()
	var res ingested
	for try := 0; ; try++ {
		m.mu.Lock()
		if m.log == nil {
			m.mu.Unlock()
			return nil
		}
		fresh := m.unseenLocked(items)
		if try == ingestTries { // the log kept changing: apply under the lock
			res = m.log.ingest(fresh, m.cfg.Now())
			m.gen++
			m.adoptLocked(&res)
			m.mu.Unlock()
			break
		}
		work, gen := m.log.Clone(), m.gen
		m.mu.Unlock()
		res = work.ingest(fresh, m.cfg.Now())
		if m.testHookIngest != nil {
			m.testHookIngest()
		}
		m.mu.Lock()
		if m.gen == gen {
			m.log = work
			m.gen++
			m.adoptLocked(&res)
			m.mu.Unlock()
			break
		}
		m.mu.Unlock()
	}
	for _, err := range res.refused {
		m.cfg.Log.Warn("dropped a pool record a member relayed", "peer", from, "err", err)
	}
	if res.accepted == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	return m.commit(ctx, nil)
}

// item is a record received, with its bytes.
type item struct {
	r   Record
	raw []byte
}

// ingested is what a relayed batch did to a log.
type ingested struct {
	held     map[[32]byte][]byte // records of the batch the log holds or holds back now
	dropped  [][32]byte          // records refused
	refused  []error
	accepted int // filled in by adoptLocked
}

// unseenLocked returns the items neither held nor refused before; m.mu is
// held.
func (m *Manager) unseenLocked(items []item) []item {
	var out []item
	for _, it := range items {
		h := it.r.Hash()
		if _, held := m.raw[h]; !held && !m.dropped[h] {
			out = append(out, it)
		}
	}
	return out
}

// ingest applies items, received now, to l.
func (l *Log) ingest(items []item, now time.Time) ingested {
	res := ingested{held: map[[32]byte][]byte{}}
	for _, it := range items {
		h := it.r.Hash()
		if _, err := l.Apply(it.r, now); err != nil {
			res.refused = append(res.refused, fmt.Errorf("record %x (%s of %s by %s): %w", h[:4], it.r.Kind, it.r.Subject, it.r.Signer, err))
			res.dropped = append(res.dropped, h)
			continue
		}
		res.held[h] = it.raw // held now, or waiting for its parents
	}
	l.state() // resolved here, not under the Manager's lock
	return res
}

// adoptLocked records the bytes of the records m.log took from a batch,
// and those it refused; m.mu is held.
func (m *Manager) adoptLocked(res *ingested) {
	for _, h := range res.dropped {
		if len(m.dropped) < maxDropped {
			m.dropped[h] = true
		}
	}
	for h, raw := range res.held {
		m.waiting[h] = raw
	}
	for h, raw := range m.waiting {
		if m.log.Has(h) {
			m.raw[h] = raw
			delete(m.waiting, h)
			res.accepted++
		}
	}
	if len(m.waiting) > maxPending {
		clear(m.waiting) // the log forgot them too; members send them again
	}
}

// maxDropped bounds the memory of refused records (each logged once).
const maxDropped = 4096

func (m *Manager) dropOnce(h [32]byte, from peer.ID, err error) {
	m.mu.Lock()
	seen := m.dropped[h]
	if !seen && len(m.dropped) < maxDropped {
		m.dropped[h] = true
	}
	m.mu.Unlock()
	if !seen {
		m.cfg.Log.Warn("dropped a pool record a member relayed", "peer", from, "err", err)
	}
}

func compareRecords(a, b Record) int {
	if a.Version != b.Version {
		if a.Version < b.Version {
			return -1
		}
		return 1
	}
	ha, hb := a.Hash(), b.Hash()
	return strings.Compare(string(ha[:]), string(hb[:]))
}

// Invite makes an invite for role, good for uses joins (0: one) until ttl
// from now (0: DefaultInviteTTL), and returns it with its code.
func (m *Manager) Invite(ctx context.Context, role Role, uses int, ttl time.Duration) (InviteState, Code, error) {
	if ttl <= 0 {
		ttl = DefaultInviteTTL
	}
	if uses == 0 {
		uses = 1
	}
	if uses < 0 || uses > MaxInviteUses {
		return InviteState{}, Code{}, fmt.Errorf("make invite: uses must be 1 to %d, not %d", MaxInviteUses, uses)
	}
	return m.signInvite(ctx, ttl, func(l *Log, expires, now time.Time) (Record, Code, error) {
		return l.NewInvite(m.key, role, uses, expires, now)
	})
}

// signInvite signs the invite make makes, expiring ttl after its version
// (its CreatedAt: a record signed in the millisecond of the one before it
// is dated a millisecond on), and returns it with its code.
func (m *Manager) signInvite(ctx context.Context, ttl time.Duration, make func(l *Log, expires, now time.Time) (Record, Code, error)) (InviteState, Code, error) {
	var code Code
	var id string
	err := m.sign(ctx, func(l *Log, now time.Time) ([]Record, error) {
		created := time.UnixMilli(int64(l.NextVersion(now)))
		r, c, err := make(l, created.Add(ttl), now)
		code, id = c, r.Subject
		return []Record{r}, err
	})
	if err != nil {
		return InviteState{}, Code{}, err
	}
	m.mu.Lock()
	inv, _ := m.log.Invite(id)
	m.mu.Unlock()
	return inv, code, nil
}

// Revoke ends an invite (its ID, or a unique prefix of it).
func (m *Manager) Revoke(ctx context.Context, invite string) error {
	return m.sign(ctx, func(l *Log, now time.Time) ([]Record, error) {
		id, err := findInvite(l, invite)
		if err != nil {
			return nil, err
		}
		r, err := l.NewRevoke(m.key, id, now)
		return []Record{r}, err
	})
}

func findInvite(l *Log, s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	var match []string
	for _, inv := range l.Invites() {
		if inv.ID == s {
			return inv.ID, nil
		}
		if s != "" && strings.HasPrefix(inv.ID, s) {
			match = append(match, inv.ID)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("%w %q", ErrNoInvite, s)
	case 1:
		return match[0], nil
	}
	return "", fmt.Errorf("invite %q: %w: give more of its ID", s, ErrAmbiguous)
}

// SetRole gives a person (their name, or a device of theirs: its ID, a
// prefix of it, or its name) role, on every one of their devices.
func (m *Manager) SetRole(ctx context.Context, who string, role Role) error {
	return m.sign(ctx, func(l *Log, now time.Time) ([]Record, error) {
		devs, err := findTarget(l, who, false)
		if err != nil {
			return nil, err
		}
		if devs[0].Role == role {
			return nil, nil
		}
		r, err := l.NewRole(m.key, devs[0].ID, role, now)
		return []Record{r}, err
	})
}

// Remove removes a person (their name: every device of theirs) or one
// device (its ID, a prefix of it, or its name) everywhere, and revokes the
// invite each device joined with.
func (m *Manager) Remove(ctx context.Context, who string) error {
	return m.sign(ctx, func(l *Log, now time.Time) ([]Record, error) {
		devs, person, err := findTargetOf(l, who, false)
		if err != nil {
			return nil, err
		}
		for _, ms := range devs {
			if ms.ID == m.Self().String() {
				return nil, fmt.Errorf("this machine cannot remove itself (it is a device of %q)", ms.PersonName)
			}
		}
		if person {
			r, err := l.NewRemovePerson(m.key, devs[0].ID, now)
			return []Record{r}, err
		}
		ms := devs[0] // a device's name or ID names one
		r, err := l.NewRemove(m.key, ms.ID, now)
		if err != nil {
			return nil, err
		}
		recs := []Record{r}
		if inv, ok := l.Invite(ms.Invite); ok && !inv.Revoked {
			rv, err := l.NewRevoke(m.key, inv.ID, now)
			if err == nil {
				recs = append(recs, rv)
			} else {
				m.cfg.Log.Warn("cannot revoke the invite of a removed member", "invite", inv.ID, "err", err)
			}
		}
		return recs, nil
	})
}

// Readmit takes back a person removed from the pool (their name: every
// removed device of theirs) or one removed device (its ID, a prefix of it,
// or its name), with the role they had: in the pool again under their
// name, their history their own. Owners and admins readmit, as they remove.
func (m *Manager) Readmit(ctx context.Context, who string) error {
	return m.sign(ctx, func(l *Log, now time.Time) ([]Record, error) {
		devs, err := findTarget(l, who, true)
		if err != nil {
			return nil, err
		}
		return signEach(l, now, devs, func(c *Log, ms MemberState) ([]Record, error) {
			role := ms.Role
			if p := c.state().activeDevice(ms.Person); p != nil {
				role = p.Role
			}
			r, err := c.NewReadmit(m.key, ms.ID, role, now)
			return []Record{r}, err
		})
	})
}

// signEach makes the records of each device in turn, each set on a copy
// of l that holds those before it, so that each extends the last.
func signEach(l *Log, now time.Time, devs []MemberState, make func(c *Log, ms MemberState) ([]Record, error)) ([]Record, error) {
	c := l.Clone()
	var all []Record
	for _, ms := range devs {
		recs, err := make(c, ms)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if _, err := c.Apply(r, now); err != nil {
				return nil, err
			}
		}
		all = append(all, recs...)
	}
	return all, nil
}

// findMember resolves who (device ID, unique prefix, or name) among the
// active members.
func findMember(l *Log, who string) (MemberState, error) {
	return findDevice(l, who, false)
}

// findDevice resolves who (device ID, unique prefix, or name) among the
// active members, or among the removed ones with removed.
func findDevice(l *Log, who string, removed bool) (MemberState, error) {
	who = strings.TrimSpace(who)
	var match []MemberState
	for _, ms := range l.Members() {
		if ms.Removed != removed {
			continue
		}
		if ms.ID == who {
			return ms, nil
		}
		if who != "" && (strings.EqualFold(ms.Name, who) || strings.HasPrefix(ms.ID, strings.ToUpper(who))) {
			match = append(match, ms)
		}
	}
	switch {
	case len(match) == 0 && removed:
		return MemberState{}, fmt.Errorf("%w %q removed from the pool", ErrNoMember, who)
	case len(match) == 0:
		return MemberState{}, fmt.Errorf("%w %q in the pool", ErrNoMember, who)
	case len(match) == 1:
		return match[0], nil
	}
	return MemberState{}, fmt.Errorf("%q %w (%d): give more of the device ID", who, ErrAmbiguous, len(match))
}

// status maps a Manager error to the HTTP status the local API answers.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrOutOfRole), errors.Is(err, ErrRemoved):
		return http.StatusForbidden
	case errors.Is(err, ErrNoMember), errors.Is(err, ErrNoInvite), errors.Is(err, ErrNotInPool):
		return http.StatusNotFound
	case errors.Is(err, ErrAmbiguous), errors.Is(err, ErrInPool), errors.Is(err, ErrBadRole):
		return http.StatusBadRequest
	}
	return 0
}
