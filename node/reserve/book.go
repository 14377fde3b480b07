package reserve

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// Caller is who asks: the device the transport proved, and its role in
// the pool ("owner", "admin", "member", "viewer"; "" not a member).
type Caller struct {
	ID, Role string
}

// Store keeps this machine's reservations: the daemon backs it with its
// own replicated records, so that every member reads them, and loads them
// back after a restart.
type Store interface {
	SaveReservation(Reservation) error
	LoadReservations() ([]Reservation, error)
}

// Config wires a Book.
type Config struct {
	Node   string              // this machine's device ID: its own user
	Units  func() []alloc.Unit // this machine's GPUs now
	Policy func() Policy       // this machine's reservation policy now
	Now    func() time.Time    // nil: time.Now
	Store  Store
	Log    *slog.Logger
	// Changed, when set, is given the grants of the reservations in force
	// or to come whenever they change (jobs.Ledger.SetHeld). It must not
	// block.
	Changed func([]alloc.Grant)
	// SamePerson (nil: devices are people of their own) says whether two
	// devices are of one person: a person reserves for themselves, cancels
	// what they reserved and counts against the policy's per-member limit
	// from any of their devices.
	SamePerson func(a, b string) bool
	// Lost, when set, is told of a reservation that lost to another (a
	// conflict found on restore), so that its member hears of it. It must
	// not block.
	Lost func(Reservation)
}

// Book is this machine's reservations: the authority over its GPUs' time.
type Book struct {
	cfg Config
	mu  sync.Mutex             // guards rs, sorted and seq
	rs  map[string]Reservation // by ID
	seq uint64                 // the last Seq given
	// sorted is rs in acceptance order, nil until asked after a change.
	sorted []Reservation
	// loaded is set once Load read the store: until then the book knows
	// not what it holds, and accepts nothing.
	loaded bool
}

// NewBook returns an empty book; Load fills it from the store.
func NewBook(cfg Config) *Book {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Policy == nil {
		cfg.Policy = func() Policy { return Policy{} }
	}
	return &Book{cfg: cfg, rs: map[string]Reservation{}}
}

// List returns every reservation the book keeps, in acceptance order.
func (b *Book) List() []Reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.sortedLocked())
}

// sortedLocked is rs in acceptance order; callers must not modify it.
func (b *Book) sortedLocked() []Reservation {
	if b.sorted == nil {
		b.sorted = make([]Reservation, 0, len(b.rs))
		for _, r := range b.rs {
			b.sorted = append(b.sorted, r)
		}
		slices.SortFunc(b.sorted, order)
	}
	return b.sorted
}

// setLocked keeps r.
func (b *Book) setLocked(r Reservation) {
	b.rs[r.ID] = r
	b.sorted = nil
}

// dropLocked forgets reservation id.
func (b *Book) dropLocked(id string) {
	delete(b.rs, id)
	b.sorted = nil
}

// order is the one rule that settles conflicts: the machine's acceptance
// order, then the ID.
func order(a, b Reservation) int {
	return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
}

// Grants returns the grants of the accepted reservations that have not
// ended.
func (b *Book) Grants() []alloc.Grant {
	now := b.cfg.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.grantsLocked(now)
}

func (b *Book) grantsLocked(now time.Time) []alloc.Grant {
	var out []alloc.Grant
	for _, r := range b.sortedLocked() {
		if r.Active(now) {
			out = append(out, r.Grant())
		}
	}
	return out
}

// changed tells Config.Changed the grants now; b.mu is held.
func (b *Book) changedLocked() {
	if b.cfg.Changed != nil {
		b.cfg.Changed(b.grantsLocked(b.cfg.Now()))
	}
}

// newID names a reservation.
func newID() string {
	var p [6]byte
	rand.Read(p[:])
	return "rsv-" + hex.EncodeToString(p[:])
}

// Reserve checks req from c against the policy and the reservations held,
// and keeps and saves the reservation it accepts.
func (b *Book) Reserve(c Caller, req Request) (Reservation, error) {
	now := b.cfg.Now()
	p := b.cfg.Policy().Effective()
	if err := b.mayReserve(c, &req, p); err != nil {
		return Reservation{}, err
	}
	if err := checkSpan(req, p, now); err != nil {
		return Reservation{}, err
	}
	from := req.From.UTC()
	r := Reservation{ID: newID(), Member: req.Member, By: c.ID, From: from,
		Until: from.Add(time.Duration(req.Seconds) * time.Second), Made: now.UTC(), State: Accepted}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.loaded {
		return Reservation{}, errors.New("this machine's reservations could not be read back: it accepts none until its agent restarts and reads them")
	}
	if err := b.roomLocked(c, r.Member, p, now); err != nil {
		return Reservation{}, err
	}
	units, err := b.fitLocked(r, req, p, now)
	if err != nil {
		return Reservation{}, err
	}
	for _, u := range units {
		r.Units, r.GPUs = append(r.Units, u.ID), append(r.GPUs, u.Index)
	}
	b.seq++
	r.Seq = b.seq
	if err := b.cfg.Store.SaveReservation(r); err != nil {
		b.seq--
		return Reservation{}, fmt.Errorf("save reservation %s: %w", r.ID, err)
	}
	b.setLocked(r)
	b.pruneLocked(now)
	b.changedLocked()
	b.cfg.Log.Info("reservation accepted", "reservation", r.ID, "member", r.Member, "gpus", r.GPUs, "from", r.From, "until", r.Until)
	return r, nil
}

// local says whether c is this machine's own user.
func (b *Book) local(c Caller) bool { return c.ID != "" && c.ID == b.cfg.Node }

// same says whether devices a and b are of one person.
func (b *Book) same(a, c string) bool {
	if b.cfg.SamePerson != nil {
		return b.cfg.SamePerson(a, c)
	}
	return a != "" && a == c
}

// manages says whether c may act on anyone's reservation here.
func (b *Book) manages(c Caller) bool { return b.local(c) || c.Role == "owner" || c.Role == "admin" }

// mayReserve refuses a caller the policy keeps out, and one reserving for
// another member without the right to; it fills req.Member.
func (b *Book) mayReserve(c Caller, req *Request, p Policy) error {
	if req.Member == "" {
		req.Member = c.ID
	}
	switch {
	case b.local(c):
		return nil
	case c.Role != "owner" && c.Role != "admin" && c.Role != "member":
		return forbid(RuleWho, "only members of the pool reserve GPUs (this device is %s)", orWord(c.Role, "not a member"))
	case p.Who == WhoNobody:
		return forbid(RuleWho, "this machine's policy lets nobody but its own user reserve its GPUs")
	case p.Who == WhoAdmins && !b.manages(c):
		return forbid(RuleWho, "this machine's policy lets only admins and owners reserve its GPUs")
	case !b.same(req.Member, c.ID) && !b.manages(c):
		return forbid(RuleOther, "only admins, owners and the machine's own user reserve for another member")
	}
	return nil
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return "a " + s
}

// checkSpan refuses a span that is malformed, in the past, too far ahead
// or longer than the policy allows. Every bound is checked before a sum
// of times is taken.
func checkSpan(req Request, p Policy, now time.Time) error {
	const slack = time.Minute // a start "now" typed a moment ago
	switch {
	case req.From.IsZero():
		return refuse(RuleForm, "say when the reservation starts")
	case req.Seconds <= 0:
		return refuse(RuleForm, "a reservation of %ds: it must last a while", req.Seconds)
	case req.GPUs < 0 || req.GPUs > 1024 || len(req.GPUIDs) > 1024:
		return refuse(RuleForm, "ask for 1 to 1024 GPUs")
	case req.GPUs == 0 && len(req.GPUIDs) == 0:
		return refuse(RuleForm, "ask for at least one GPU")
	case req.GPUs > 0 && len(req.GPUIDs) > 0:
		return refuse(RuleForm, "ask for a number of GPUs or for GPUs by index, not both")
	case req.From.Before(now.Add(-slack)):
		return refuse(RulePast, "it starts at %s, before now (%s)", stamp(req.From), stamp(now))
	case req.Seconds > p.MaxSeconds:
		return refuse(RuleLong, "%s is longer than this machine allows (%s)", span(req.Seconds), span(p.MaxSeconds))
	case req.From.Sub(now) > time.Duration(p.AheadSeconds)*time.Second:
		return refuse(RuleAhead, "it starts at %s, more than %s ahead", stamp(req.From), span(p.AheadSeconds))
	}
	return nil
}

func stamp(t time.Time) string { return t.Format("Mon 2 Jan 2006 15:04 MST") }

func span(secs int64) string { return (time.Duration(secs) * time.Second).String() }

// roomLocked refuses one more reservation past the book's bounds: the
// machine's, and the policy's per member (but for the machine's own user).
func (b *Book) roomLocked(c Caller, member string, p Policy, now time.Time) error {
	n, mine := 0, 0
	for _, r := range b.rs {
		if r.Active(now) {
			n++
			if b.same(r.Member, member) {
				mine++
			}
		}
	}
	switch {
	case n >= MaxActive:
		return refuse(RuleTooMany, "this machine holds %d reservations to come, its most", n)
	case mine >= p.PerMember && !b.local(c):
		return refuse(RuleTooMany, "this member holds %d reservations to come here, the most this machine allows", mine)
	}
	return nil
}

// fitLocked picks the GPUs of r with alloc.Fit against the reservations
// held, refusing unknown GPUs, more than the policy allows, and overlaps
// (naming the reservation in the way).
func (b *Book) fitLocked(r Reservation, req Request, p Policy, now time.Time) ([]alloc.Unit, error) {
	units := b.gpus()
	want := max(req.GPUs, len(req.GPUIDs))
	if p.MaxGPUs > 0 && want > p.MaxGPUs {
		return nil, refuse(RuleGPUs, "%d GPUs asked; this machine allows at most %d per reservation", want, p.MaxGPUs)
	}
	if want > len(units) {
		return nil, refuse(RuleUnknown, "%d GPUs asked; this machine has %d", want, len(units))
	}
	ar := alloc.Request{Holder: alloc.Holder{Kind: alloc.Reservation, ID: r.ID}, Count: req.GPUs, Until: r.Until}
	for _, i := range req.GPUIDs {
		u, ok := unitAt(units, i)
		if !ok || slices.Contains(ar.Units, u.ID) {
			return nil, refuse(RuleUnknown, "this machine has no GPU %d (or it is asked twice)", i)
		}
		ar.Units = append(ar.Units, u.ID)
	}
	// The holder has no member: a member's own reservations overlap no
	// less than another's.
	d := alloc.Fit(units, b.grantsLocked(now), ar, r.From)
	if !d.Fits {
		return nil, fitRefusal(d)
	}
	return d.Units, nil
}

// gpus is this machine's whole GPUs.
func (b *Book) gpus() []alloc.Unit {
	var out []alloc.Unit
	if b.cfg.Units == nil {
		return nil
	}
	for _, u := range b.cfg.Units() {
		if u.Kind == alloc.GPU || u.Kind == "" {
			u.Kind = alloc.GPU
			out = append(out, u)
		}
	}
	return out
}

func unitAt(units []alloc.Unit, index int) (alloc.Unit, bool) {
	for _, u := range units {
		if u.Index == index {
			return u, true
		}
	}
	return alloc.Unit{}, false
}

// fitRefusal names the rule of a Decision that does not fit.
func fitRefusal(d alloc.Decision) error {
	for _, p := range d.Passed {
		if p.Reason == alloc.Reserved {
			return refuse(RuleOverlap, "GPU %d is held by %s from %s to %s (%s)", p.Unit.Index, p.By.ID,
				stamp(p.From), stamp(p.Until), d.Why())
		}
	}
	return refuse(RuleDown, "%s", d.Why())
}

// Cancel cancels reservation id for c: its member, who made it, an admin
// or owner of the pool, or this machine's own user.
func (b *Book) Cancel(c Caller, id string) (Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.rs[id]
	if !ok {
		return Reservation{}, &Error{Rule: RuleNotFound, Detail: fmt.Sprintf("%.40q is none of this machine's reservations", id), NotFound: true}
	}
	if !b.same(r.Member, c.ID) && !b.same(r.By, c.ID) && !b.manages(c) {
		return Reservation{}, forbid(RuleCancel, "reservation %s is %s's: only they, admins, owners and the machine's own user cancel it", r.ID, r.Member)
	}
	if r.State != Accepted {
		return r, nil
	}
	r.State, r.Rule, r.Reason = Cancelled, "cancelled", "cancelled by "+c.ID
	if err := b.cfg.Store.SaveReservation(r); err != nil {
		return Reservation{}, fmt.Errorf("save reservation %s: %w", r.ID, err)
	}
	b.setLocked(r)
	b.changedLocked()
	b.cfg.Log.Info("reservation cancelled", "reservation", r.ID, "by", c.ID)
	return r, nil
}
