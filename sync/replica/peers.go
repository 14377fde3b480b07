package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// Dialer gives an HTTP client whose connections reach the device id at one
// of addrs and fail unless the handshake proves id.
type Dialer interface {
	Client(id peer.ID, addrs []string) *http.Client
}

// Config tunes the followers.
type Config struct {
	// Reconcile is how often the member set is re-read to start and stop
	// followers.
	Reconcile time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnects.
	MinBackoff, MaxBackoff time.Duration
	// Silence ends a session that received no frame (not even a
	// heartbeat) for this long: the peer's process is hung or gone.
	Silence time.Duration
	// RemovedRetry is how often a device removed from the pool asks each
	// of its old pool's members again (each refuses it, telling it the
	// pool's records), so that a readmission reaches it with nobody
	// touching it. 0 is DefaultRemovedRetry.
	RemovedRetry time.Duration
}

// DefaultRemovedRetry is how often a removed device asks again: a
// readmitted device is back within it, and a removed one costs each
// member a refused request per minute.
const DefaultRemovedRetry = time.Minute

// DefaultConfig returns the settings the daemon uses.
func DefaultConfig() Config {
	return Config{Reconcile: time.Second, MinBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second,
		Silence: 2500 * time.Millisecond, RemovedRetry: DefaultRemovedRetry}
}

// Peers follows the stream of every member but this node.
type Peers struct {
	cfg  Config
	db   *store.DB
	self peer.ID
	dial Dialer
	log  *slog.Logger

	// OnChange is called (from any goroutine) when a member goes online or
	// offline; it must not block.
	OnChange func(id string, online bool)
	// OnPool is given the signed membership records a member relays; it
	// checks and keeps the valid ones (sync/pool.Manager.Receive).
	OnPool func(ctx context.Context, from peer.ID, recs []json.RawMessage) error
	// Published returns the addresses a member's node record (its data)
	// says it may be reached at; nil learns no address from records.
	Published func(data []byte) []string

	mu      sync.Mutex // guards peers, pending, learnt, removed and each follower's book
	peers   map[string]*follower
	removed bool                    // the member set says this device was removed: it asks every RemovedRetry
	pending map[string]*pendingHint // hints for devices without a follower
	learnt  chan struct{}           // closed (and replaced) when an address is learnt
	// published is what each member's node record says, relayGen counts
	// its changes (relay.go).
	published map[string][]string
	relayGen  uint64
}

type follower struct {
	id     peer.ID
	book   addrBook // pinned address, then hints: mDNS, the join address, the peer's own record
	online bool
	since  time.Time // of the current state
	// dialing is when the session's dial began, zero while none is under
	// way (heal.go restarts an old one when a path may be back).
	dialing time.Time
	cancel  context.CancelFunc
	wake    chan struct{}   // a new hint, or a sign that a path is back (heal.go), cuts a reconnect wait short
	logged  map[string]bool // the rules a refusal of its records was logged for; its follow goroutine's own
}

// NewPeers returns the follower set of node self.
func NewPeers(cfg Config, db *store.DB, self peer.ID, dial Dialer, log *slog.Logger) *Peers {
	return &Peers{cfg: cfg, db: db, self: self, dial: dial, log: log, peers: map[string]*follower{}}
}

// Online reports whether id has a live, pinned stream to us.
func (p *Peers) Online(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.peers[id]
	return f != nil && f.online
}

// AllOnline reports whether this node follows at least one member and
// every member it follows has a live stream: nothing is missing, so
// discovery may look less often.
func (p *Peers) AllOnline() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.peers {
		if f.cancel == nil { // removed
			continue
		}
		if !f.online {
			return false
		}
		n++
	}
	return n > 0
}

// Addrs returns the addresses known for id: the one where a session last
// succeeded first, then hints, newest first.
func (p *Peers) Addrs(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrsLocked(id)
}

// addrsLocked is Addrs, hints waiting for a follower included. p.mu must
// be held.
func (p *Peers) addrsLocked(id string) []string {
	if f := p.peers[id]; f != nil {
		return f.book.list()
	}
	if h := p.pending[id]; h != nil && time.Since(h.at) < pendingTTL {
		return h.book.list()
	}
	return nil
}

// WaitAddrs returns the addresses known for id, waiting until one is
// learnt (a join, mDNS, a member's relay) or ctx ends: a command given
// right after a join finds the machine it names.
func (p *Peers) WaitAddrs(ctx context.Context, id string) []string {
	for {
		p.mu.Lock()
		addrs := p.addrsLocked(id)
		if p.learnt == nil {
			p.learnt = make(chan struct{})
		}
		learnt := p.learnt
		p.mu.Unlock()
		if len(addrs) > 0 {
			return addrs
		}
		select {
		case <-ctx.Done():
			return nil
		case <-learnt:
		}
	}
}

// wakeWaiters tells WaitAddrs that an address was learnt. p.mu must be
// held.
func (p *Peers) wakeWaiters() {
	if p.learnt != nil {
		close(p.learnt)
		p.learnt = nil
	}
}

// Hint records addresses where id may be reached (from mDNS or a join).
// They are unverified: they go after the address where a session with id
// last succeeded, and never displace it. A hint for a device that has no
// follower (not a member, or not reconciled yet) waits in a small table
// that forgets it after a while; a follower starts only for a member.
func (p *Peers) Hint(id string, addrs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.wakeWaiters()
	f := p.peers[id]
	if f == nil {
		p.holdHint(id, addrs, time.Now())
		return
	}
	f.book.hint(addrs)
	if !f.online {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// Run follows the members until ctx is cancelled, and returns after every
// follower has stopped.
func (p *Peers) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer func() {
		p.mu.Lock()
		for _, f := range p.peers {
			if f.cancel != nil {
				f.cancel()
			}
		}
		p.mu.Unlock()
		wg.Wait()
	}()
	t := beat.NewTicker(p.cfg.Reconcile)
	defer t.Stop()
	changed, stop := p.db.SubscribeMembers() // a member admitted here is followed at once
	defer stop()
	var (
		gen  uint64    // of the member set last read
		last time.Time // when it was read
	)
	for {
		// The member set is read again when this process changed it, and
		// every fullReconcile in case another process did.
		if g := p.db.MembersGeneration(); last.IsZero() || g != gen || time.Since(last) >= fullReconcile {
			gen, last = g, time.Now()
			if err := p.reconcile(ctx, &wg); err != nil {
				p.log.Warn("read members", "err", err)
				last = time.Time{}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-changed:
		}
	}
}

// fullReconcile bounds how long a change of the member set made by another
// process (which MembersGeneration does not see) waits to be followed.
const fullReconcile = 30 * time.Second

// reconcile starts a follower for each member and stops those of removed
// devices.
func (p *Peers) reconcile(ctx context.Context, wg *sync.WaitGroup) error {
	members, err := p.db.Members(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Removed from the pool: the members refuse this device, telling it the
	// pool's records; it asks each again only every RemovedRetry (follow),
	// so that a readmission reaches it.
	p.setRemovedLocked(selfRemoved(members, p.self.String()))
	for _, m := range members {
		if m.ID == p.self.String() {
			continue
		}
		f := p.peers[m.ID]
		if m.Removed {
			if f != nil && f.cancel != nil {
				f.cancel()
				f.cancel = nil
			}
			continue
		}
		if f != nil && f.cancel != nil {
			continue
		}
		id, err := peer.ParseID(m.ID)
		if err != nil {
			p.log.Warn("member with a malformed device ID", "id", m.ID)
			continue
		}
		if f == nil {
			f = &follower{wake: make(chan struct{}, 1)}
			p.adoptHints(m.ID, f, time.Now())
			p.peers[m.ID] = f
		}
		fctx, cancel := context.WithCancel(ctx)
		f.id, f.cancel = id, cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.follow(fctx, f)
		}()
	}
	return nil
}

// follow keeps one member's stream open, reconnecting with backoff; while
// this device is removed from the pool, it asks once every RemovedRetry.
func (p *Peers) follow(ctx context.Context, f *follower) {
	backoff := p.cfg.MinBackoff
	for ctx.Err() == nil {
		if p.isRemoved() && !p.waitRemoved(ctx) {
			return
		}
		start := time.Now()
		err := p.session(ctx, f)
		p.setOnline(f, false)
		if ctx.Err() != nil {
			return
		}
		p.log.Debug("replication session ended", "peer", f.id, "err", err)
		if errors.Is(err, errTold) {
			p.readRemoved(ctx) // the records told may have removed it: wait as removed at once
		}
		if p.isRemoved() {
			backoff = p.cfg.MinBackoff
			continue // the next ask waits RemovedRetry
		}
		if errors.Is(err, errWoken) {
			backoff = p.cfg.MinBackoff
			continue
		}
		if time.Since(start) > 10*time.Second {
			backoff = p.cfg.MinBackoff
		}
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
			backoff = p.cfg.MinBackoff
			continue
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, p.cfg.MaxBackoff)
	}
}

// isRemoved says whether the member set last read says this device was
// removed.
func (p *Peers) isRemoved() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.removed
}

// readRemoved reads from the member set whether this device was removed,
// ahead of the next reconcile.
func (p *Peers) readRemoved(ctx context.Context) {
	members, err := p.db.Members(ctx)
	if err != nil {
		return // the next reconcile reads it
	}
	p.mu.Lock()
	p.setRemovedLocked(selfRemoved(members, p.self.String()))
	p.mu.Unlock()
}

// setRemovedLocked records whether this device is removed. When that
// changes, every follower stops (its session ends at once: a removed
// device calls nobody until its next ask) and the next reconcile starts
// them again, asking once every RemovedRetry while removed, following at
// once when readmitted. p.mu is held.
func (p *Peers) setRemovedLocked(removed bool) {
	if removed != p.removed {
		for _, f := range p.peers {
			if f.cancel != nil {
				f.cancel()
				f.cancel = nil
			}
		}
	}
	p.removed = removed
}

// waitRemoved waits RemovedRetry, the time between a removed device's
// asks, and reports whether ctx is still live: nothing wakes it sooner
// (hints and new addresses do not make a removed device ask more often).
func (p *Peers) waitRemoved(ctx context.Context) bool {
	wait := p.cfg.RemovedRetry
	if wait <= 0 {
		wait = DefaultRemovedRetry
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}

func (p *Peers) addrs(f *follower) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return f.book.list()
}

// session runs one replication stream from f's device until it fails.
func (p *Peers) session(ctx context.Context, f *follower) error {
	addrs := p.addrs(f)
	if len(addrs) == 0 {
		return errors.New("no address known yet")
	}
	origin := f.id.String()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchdog := time.AfterFunc(p.cfg.Silence, cancel)
	defer watchdog.Stop()
	since, err := p.db.Cursor(ctx, origin)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer"+StreamPath+"?since="+strconv.FormatUint(since, 10), nil)
	if err != nil {
		return err
	}
	p.setDialing(f, time.Now())
	resp, err := p.dialWakeable(ctx, cancel, f, req, addrs)
	p.setDialing(f, time.Time{})
	if err != nil {
		if ctx.Err() != nil && parent.Err() == nil {
			// The watchdog ended the request, not its dial: that is shared
			// and goes on, its retransmissions seconds apart, and the next
			// session would wait on it. The next one dials afresh.
			p.drop([]peer.ID{f.id})
		}
		return err
	}
	defer resp.Body.Close()
	if told, ok := readTold(resp); ok {
		// This device was removed: the pool's records prove it (or not).
		if p.OnPool != nil {
			if err := p.OnPool(ctx, f.id, told.Pool); err != nil {
				return err
			}
		}
		return fmt.Errorf("replication stream: %s: %w", told.Message, errTold)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("replication stream: %s: %s", resp.Status, msg)
	}
	p.pinSession(f) // before it says online: whoever sees it online sees the address pinned
	p.setOnline(f, true)
	p.log.Debug("replication session up", "peer", f.id)
	dec := NewDecoder(resp.Body)
	skipped := false // history was paused by a full disk during this session
	for {
		fr, err := dec.Next()
		if err != nil {
			return err
		}
		watchdog.Reset(p.cfg.Silence)
		if err := p.apply(ctx, f, fr); err != nil {
			return err
		}
		// Put skipped the peer's history while the disk was full and kept
		// its cursor below it: once history resumes, a new session fetches
		// it again from there.
		if p.db.HistoryPaused() {
			skipped = true
		} else if skipped {
			return errResync
		}
	}
}

// dialWakeable sends the stream request of a session (whose context
// cancel ends). A new address hint while it is still dialling (the peer's
// old address is dead, or the peer just came back: its own stream to here
// hinted where) cancels it, and the session ends with errWoken to dial
// again at once, instead of waiting out the handshake's retransmissions.
func (p *Peers) dialWakeable(ctx context.Context, cancel context.CancelFunc, f *follower, req *http.Request, addrs []string) (*http.Response, error) {
	dialed, done := make(chan struct{}), make(chan bool, 1)
	go func() {
		// A dial younger than wakeAfter runs on: its handshake may be
		// about to finish (a peer back at its old address is hinted by
		// its stream here and by mDNS within a few milliseconds).
		t := time.NewTimer(wakeAfter)
		defer t.Stop()
		select {
		case <-t.C:
		case <-dialed:
			done <- false
			return
		case <-ctx.Done():
			done <- false
			return
		}
		select {
		case <-f.wake:
			cancel()
			done <- true
		case <-dialed:
			done <- false
		case <-ctx.Done():
			done <- false
		}
	}()
	resp, err := p.dial.Client(f.id, addrs).Do(req)
	close(dialed)
	if <-done {
		if err == nil {
			resp.Body.Close() // made as the wake came: dialled again
		}
		// The transport shares one dial among a peer's requests and lets
		// it run on: drop it, so that the next request dials anew.
		if d, ok := p.dial.(dropper); ok {
			d.Drop(f.id)
		}
		return nil, errWoken
	}
	return resp, err
}

// wakeAfter is how long a dial runs before a new hint may cut it short.
const wakeAfter = 100 * time.Millisecond

// errWoken ends a session whose dial a new address hint cut short.
var errWoken = errors.New("dialling again: a new address was hinted")

// errTold ends a session the member refused as this device was removed.
var errTold = errors.New("told it was removed")

// errResync ends a session so that the next one fetches what a full disk
// made Put skip.
var errResync = errors.New("history resumed: fetching again what the full disk skipped")

// apply stores a frame; records must be the peer's own. Membership
// records go to OnPool, which checks each one.
func (p *Peers) apply(ctx context.Context, f *follower, fr Frame) error {
	origin := f.id.String()
	for _, r := range fr.Records {
		if r.Origin != origin {
			return fmt.Errorf("peer %s sent a record of %s", origin, r.Origin)
		}
	}
	if len(fr.Records) > 0 {
		refused, err := p.db.Receive(ctx, fr.Records)
		if err != nil {
			return err
		}
		p.logRefused(f, refused)
		p.learnRecords(origin, fr.Records)
	}
	if len(fr.Addrs) > 0 {
		p.learnRelayed(origin, fr.Addrs)
	}
	if len(fr.Pool) > 0 && p.OnPool != nil {
		return p.OnPool(ctx, f.id, fr.Pool)
	}
	return nil
}

// logRefused logs the first record of f's peer refused under each rule:
// the stream goes on without them.
func (p *Peers) logRefused(f *follower, refused []store.Refused) {
	for _, r := range refused {
		var rf *schema.Refusal
		if !errors.As(r.Err, &rf) || f.logged[rf.Rule] {
			continue
		}
		if f.logged == nil {
			f.logged = map[string]bool{}
		}
		f.logged[rf.Rule] = true
		p.log.Warn("replication: a peer's record refused; its later refusals under this rule are not logged",
			"peer", f.id, "kind", fmt.Sprintf("%.64s", r.Kind), "seq", r.Seq, "err", r.Err)
	}
}

func (p *Peers) setOnline(f *follower, online bool) {
	p.mu.Lock()
	changed := f.online != online
	f.online = online
	if changed {
		f.since = time.Now()
	}
	p.mu.Unlock()
	if changed && p.OnChange != nil {
		p.OnChange(f.id.String(), online)
	}
	if changed && online {
		p.backOnline(f)
	}
}

// selfRemoved says whether the member set holds self as removed.
func selfRemoved(members []store.MemberRow, self string) bool {
	for _, m := range members {
		if m.ID == self {
			return m.Removed
		}
	}
	return false
}
