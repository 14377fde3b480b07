package reserve_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/reserve"
)

// memStore is a Store in memory: the records this machine wrote, by ID,
// last write wins, as the replica keeps one record per key.
type memStore struct {
	mu   sync.Mutex
	recs map[string]reserve.Reservation
	fail error
}

func (s *memStore) SaveReservation(r reserve.Reservation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.recs == nil {
		s.recs = map[string]reserve.Reservation{}
	}
	s.recs[r.ID] = r
	return nil
}

func (s *memStore) LoadReservations() ([]reserve.Reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []reserve.Reservation
	for _, r := range s.recs {
		out = append(out, r)
	}
	return out, nil
}

const node = "NODE"

var (
	t0     = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) // a Monday
	alice  = reserve.Caller{ID: "ALICE", Role: "member"}
	bob    = reserve.Caller{ID: "BOB", Role: "member"}
	admin  = reserve.Caller{ID: "ADMIN", Role: "admin"}
	viewer = reserve.Caller{ID: "VIEW", Role: "viewer"}
	local  = reserve.Caller{ID: node}
	// aliceLaptop is another device of alice's.
	aliceLaptop = reserve.Caller{ID: "ALICE-LAPTOP", Role: "member"}
)

// samePerson says ALICE and ALICE-LAPTOP are one person.
func samePerson(a, b string) bool {
	person := func(id string) string { return strings.TrimSuffix(id, "-LAPTOP") }
	return a != "" && person(a) == person(b)
}

func gpus(n int) []alloc.Unit {
	var us []alloc.Unit
	for i := range n {
		us = append(us, alloc.Unit{ID: fmt.Sprintf("GPU-%d", i), Kind: alloc.GPU, Node: node, Index: i})
	}
	return us
}

type fixture struct {
	book   *reserve.Book
	store  *memStore
	policy reserve.Policy
	held   []alloc.Grant
	lost   []reserve.Reservation
}

func newFixture(t *testing.T, p reserve.Policy) *fixture {
	t.Helper()
	f := &fixture{store: &memStore{}, policy: p}
	f.book = f.open()
	return f
}

// open starts a book over f's store, as an agent does at start.
func (f *fixture) open() *reserve.Book {
	b := reserve.NewBook(reserve.Config{Node: node, Units: func() []alloc.Unit { return gpus(4) },
		Policy: func() reserve.Policy { return f.policy }, Now: func() time.Time { return t0 }, Store: f.store,
		SamePerson: samePerson,
		Changed:    func(g []alloc.Grant) { f.held = g }, Lost: func(r reserve.Reservation) { f.lost = append(f.lost, r) }})
	if err := b.Load(); err != nil {
		panic(err)
	}
	return b
}

func hours(h float64) int64 { return int64(h * 3600) }

func TestReserveRefusals(t *testing.T) {
	tests := []struct {
		name   string
		policy reserve.Policy
		c      reserve.Caller
		req    reserve.Request
		rule   string
	}{
		{"viewer", reserve.Policy{}, viewer, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleWho},
		{"stranger", reserve.Policy{}, reserve.Caller{ID: "X"}, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleWho},
		{"admins only", reserve.Policy{Who: reserve.WhoAdmins}, alice, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleWho},
		{"nobody", reserve.Policy{Who: reserve.WhoNobody}, admin, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleWho},
		{"for another member", reserve.Policy{}, alice, reserve.Request{Member: "BOB", GPUs: 1, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleOther},
		{"in the past", reserve.Policy{}, alice, reserve.Request{GPUs: 1, From: t0.Add(-time.Hour), Seconds: 3600}, reserve.RulePast},
		{"longer than allowed", reserve.Policy{MaxSeconds: hours(4)}, alice, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: hours(5)}, reserve.RuleLong},
		{"too far ahead", reserve.Policy{AheadSeconds: hours(48)}, alice, reserve.Request{GPUs: 1, From: t0.Add(72 * time.Hour), Seconds: 3600}, reserve.RuleAhead},
		{"over policy gpus", reserve.Policy{MaxGPUs: 2}, alice, reserve.Request{GPUs: 3, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleGPUs},
		{"unknown gpu", reserve.Policy{}, alice, reserve.Request{GPUIDs: []int{7}, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleUnknown},
		{"gpu asked twice", reserve.Policy{}, alice, reserve.Request{GPUIDs: []int{1, 1}, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleUnknown},
		{"more gpus than the machine", reserve.Policy{}, alice, reserve.Request{GPUs: 5, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleUnknown},
		{"no gpus", reserve.Policy{}, alice, reserve.Request{From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleForm},
		{"no start", reserve.Policy{}, alice, reserve.Request{GPUs: 1, Seconds: 3600}, reserve.RuleForm},
		{"no length", reserve.Policy{}, alice, reserve.Request{GPUs: 1, From: t0.Add(time.Hour)}, reserve.RuleForm},
		{"negative gpus", reserve.Policy{}, alice, reserve.Request{GPUs: -1, From: t0.Add(time.Hour), Seconds: 3600}, reserve.RuleForm},
		// The span overflows: From.Add(Seconds) would wrap around.
		{"span overflows", reserve.Policy{}, alice, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: math.MaxInt64}, reserve.RuleLong},
		{"start overflows", reserve.Policy{}, alice, reserve.Request{GPUs: 1, From: time.Date(292277026, 1, 1, 0, 0, 0, 0, time.UTC), Seconds: 3600}, reserve.RuleAhead},
		{"policy max over a year", reserve.Policy{MaxSeconds: math.MaxInt64}, alice, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: math.MaxInt64 - 10}, reserve.RuleLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.policy)
			r, err := f.book.Reserve(tt.c, tt.req)
			var e *reserve.Error
			if !errors.As(err, &e) || e.Rule != tt.rule {
				t.Fatalf("Reserve = %+v, %v; want a refusal by rule %q", r, err, tt.rule)
			}
			if len(f.store.recs) != 0 || len(f.book.List()) != 0 {
				t.Errorf("a refused request left records: %v", f.store.recs)
			}
		})
	}
}

func TestReserveOverlapNamesTheReservation(t *testing.T) {
	f := newFixture(t, reserve.Policy{})
	first, err := f.book.Reserve(alice, reserve.Request{GPUIDs: []int{0, 1}, From: t0.Add(2 * time.Hour), Seconds: hours(3)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		c      reserve.Caller
		req    reserve.Request
		wantOK bool
	}{
		{"same gpus inside", bob, reserve.Request{GPUIDs: []int{1}, From: t0.Add(3 * time.Hour), Seconds: 600}, false},
		{"same member overlapping", alice, reserve.Request{GPUIDs: []int{0}, From: t0.Add(4 * time.Hour), Seconds: hours(2)}, false},
		{"ends at its start", bob, reserve.Request{GPUIDs: []int{0}, From: t0.Add(time.Hour), Seconds: hours(1)}, true},
		{"starts at its end", bob, reserve.Request{GPUIDs: []int{0}, From: t0.Add(5 * time.Hour), Seconds: hours(1)}, true},
		{"other gpus", bob, reserve.Request{GPUIDs: []int{2, 3}, From: t0.Add(2 * time.Hour), Seconds: hours(3)}, true},
		{"count, none left", bob, reserve.Request{GPUs: 1, From: t0.Add(2 * time.Hour), Seconds: hours(1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := f.book.Reserve(tt.c, tt.req)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Reserve: %v", err)
				}
				return
			}
			var e *reserve.Error
			if !errors.As(err, &e) || e.Rule != reserve.RuleOverlap {
				t.Fatalf("Reserve = %+v, %v; want refused by %q", r, err, reserve.RuleOverlap)
			}
			if tt.name != "count, none left" && !contains(e.Detail, first.ID) {
				t.Errorf("refusal %q does not name reservation %s", e.Detail, first.ID)
			}
		})
	}
}

func contains(s, sub string) bool { return sub != "" && strings.Contains(s, sub) }

func TestReserveTooMany(t *testing.T) {
	f := newFixture(t, reserve.Policy{AheadSeconds: reserve.MaxSpan})
	for i := range reserve.MaxActive {
		if _, err := f.book.Reserve(local, reserve.Request{GPUIDs: []int{0}, From: t0.Add(time.Duration(i+1) * time.Hour), Seconds: 600}); err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
	}
	_, err := f.book.Reserve(local, reserve.Request{GPUIDs: []int{1}, From: t0.Add(time.Hour), Seconds: 600})
	var e *reserve.Error
	if !errors.As(err, &e) || e.Rule != reserve.RuleTooMany {
		t.Fatalf("reservation %d: %v; want refused by %q", reserve.MaxActive+1, err, reserve.RuleTooMany)
	}
}

// A member cannot hold the machine's calendar: past the policy's
// reservations to come per member, one more is refused; another member
// still reserves.
func TestReservePerMember(t *testing.T) {
	f := newFixture(t, reserve.Policy{PerMember: 3})
	for i := range 3 {
		if _, err := f.book.Reserve(alice, reserve.Request{GPUs: 1, From: t0.Add(time.Duration(i+1) * time.Hour), Seconds: 600}); err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
	}
	_, err := f.book.Reserve(alice, reserve.Request{GPUs: 1, From: t0.Add(10 * time.Hour), Seconds: 600})
	var e *reserve.Error
	if !errors.As(err, &e) || e.Rule != reserve.RuleTooMany {
		t.Fatalf("alice's 4th: %v; want refused by %q", err, reserve.RuleTooMany)
	}
	// An admin reserving for alice counts against alice too.
	if _, err := f.book.Reserve(admin, reserve.Request{Member: "ALICE", GPUs: 1, From: t0.Add(10 * time.Hour), Seconds: 600}); !errors.As(err, &e) || e.Rule != reserve.RuleTooMany {
		t.Fatalf("an admin's 4th for alice: %v; want refused by %q", err, reserve.RuleTooMany)
	}
	if _, err := f.book.Reserve(bob, reserve.Request{GPUs: 1, From: t0.Add(10 * time.Hour), Seconds: 600}); err != nil {
		t.Fatalf("bob's first: %v", err)
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name string
		c    reserve.Caller
		ok   bool
	}{
		{"its member", alice, true},
		{"another device of its member", aliceLaptop, true},
		{"another member", bob, false},
		{"a viewer", viewer, false},
		{"an admin", admin, true},
		{"the machine's user", local, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, reserve.Policy{})
			r, err := f.book.Reserve(alice, reserve.Request{GPUs: 2, From: t0.Add(time.Hour), Seconds: 3600})
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.book.Cancel(tt.c, r.ID)
			if !tt.ok {
				var e *reserve.Error
				if !errors.As(err, &e) || e.Rule != reserve.RuleCancel {
					t.Fatalf("Cancel = %v; want refused by %q", err, reserve.RuleCancel)
				}
				if len(f.held) != 1 || f.store.recs[r.ID].State != reserve.Accepted {
					t.Errorf("a refused cancel changed the reservation: held %v, record %+v", f.held, f.store.recs[r.ID])
				}
				return
			}
			if err != nil || got.State != reserve.Cancelled {
				t.Fatalf("Cancel = %+v, %v", got, err)
			}
			if len(f.held) != 0 || f.store.recs[r.ID].State != reserve.Cancelled {
				t.Errorf("cancelled, yet held %v, record %+v", f.held, f.store.recs[r.ID])
			}
		})
	}
}

func TestCancelUnknown(t *testing.T) {
	f := newFixture(t, reserve.Policy{})
	var e *reserve.Error
	if _, err := f.book.Cancel(admin, "rsv-nope"); !errors.As(err, &e) || !e.NotFound {
		t.Fatalf("Cancel of no reservation = %v; want not found", err)
	}
}

// A reservation survives a restart: the book loaded again from its store
// holds it, and gives the ledger its grant.
func TestReservationSurvivesRestart(t *testing.T) {
	f := newFixture(t, reserve.Policy{})
	r, err := f.book.Reserve(alice, reserve.Request{GPUs: 2, From: t0.Add(time.Hour), Seconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	f.held = nil
	b := f.open()
	if got := b.List(); len(got) != 1 || got[0].ID != r.ID || got[0].State != reserve.Accepted {
		t.Fatalf("after a restart the book holds %+v; want %s", got, r.ID)
	}
	if len(f.held) != 1 || !slices.Equal(f.held[0].Units, r.Units) || f.held[0].Holder.Kind != alloc.Reservation {
		t.Fatalf("after a restart the ledger is fed %+v", f.held)
	}
	// and numbering goes on after the restored ones
	r2, err := b.Reserve(bob, reserve.Request{GPUs: 2, From: t0.Add(time.Hour), Seconds: 3600})
	if err != nil || r2.Seq <= r.Seq {
		t.Fatalf("second reservation = %+v, %v; want Seq after %d", r2, err, r.Seq)
	}
}

// Two records for the same GPUs at once (a restore over newer records, two
// stores merged): the machine's acceptance order settles it, never the
// times the records carry; the loser is saved refused, naming the rule,
// and its member is told.
func TestSettleByAcceptanceOrder(t *testing.T) {
	early := reserve.Reservation{ID: "rsv-b", Seq: 3, Member: "BOB", Units: []string{"GPU-0"}, GPUs: []int{0},
		From: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour), Made: t0.Add(time.Hour), State: reserve.Accepted}
	// The later one claims to have been made first, and to start first.
	late := reserve.Reservation{ID: "rsv-a", Seq: 4, Member: "ALICE", Units: []string{"GPU-1", "GPU-0"}, GPUs: []int{1, 0},
		From: t0.Add(30 * time.Minute), Until: t0.Add(2 * time.Hour), Made: t0.Add(-time.Hour), State: reserve.Accepted}
	other := reserve.Reservation{ID: "rsv-c", Seq: 5, Member: "CAROL", Units: []string{"GPU-2"}, GPUs: []int{2},
		From: t0.Add(time.Hour), Until: t0.Add(2 * time.Hour), State: reserve.Accepted}
	for _, in := range [][]reserve.Reservation{{early, late, other}, {other, late, early}, {late, other, early}} {
		f := &fixture{store: &memStore{recs: map[string]reserve.Reservation{}}}
		for _, r := range in {
			f.store.recs[r.ID] = r
		}
		b := f.open()
		got := map[string]reserve.Reservation{}
		for _, r := range b.List() {
			got[r.ID] = r
		}
		if got["rsv-b"].State != reserve.Accepted || got["rsv-c"].State != reserve.Accepted {
			t.Errorf("winners: %+v", got)
		}
		if l := got["rsv-a"]; l.State != reserve.Refused || l.Rule != reserve.RuleOverlap || !contains(l.Reason, "rsv-b") {
			t.Errorf("loser = %+v; want refused by %q naming rsv-b", l, reserve.RuleOverlap)
		}
		if f.store.recs["rsv-a"].State != reserve.Refused {
			t.Errorf("the loser's record is not saved refused: %+v", f.store.recs["rsv-a"])
		}
		if len(f.lost) != 1 || f.lost[0].ID != "rsv-a" || f.lost[0].Member != "ALICE" {
			t.Errorf("told of losers %+v; want rsv-a, ALICE's", f.lost)
		}
		if len(f.held) != 2 {
			t.Errorf("ledger fed %d grants; want the 2 winners", len(f.held))
		}
	}
}

// A record seen twice under one ID keeps its cancelled state: a restore of
// an older accepted copy gives nothing back.
func TestSettleKeepsCancel(t *testing.T) {
	r := reserve.Reservation{ID: "rsv-x", Seq: 1, Member: "BOB", Units: []string{"GPU-0"}, From: t0, Until: t0.Add(time.Hour), State: reserve.Accepted}
	c := r
	c.State = reserve.Cancelled
	for _, in := range [][]reserve.Reservation{{r, c}, {c, r}} {
		kept, lost := reserve.Settle(in)
		if len(kept) != 1 || kept[0].State != reserve.Cancelled || len(lost) != 0 {
			t.Errorf("Settle(%v) = %+v, %+v; want it cancelled", in, kept, lost)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	tests := []struct {
		p  reserve.Policy
		ok bool
	}{
		{reserve.Policy{}, true},
		{reserve.Policy{Who: "admins", MaxGPUs: 4, MaxSeconds: 3600, AtStart: "stop"}, true},
		{reserve.Policy{AtStart: "requeue"}, true},
		{reserve.Policy{Who: "everyone"}, false},
		{reserve.Policy{MaxGPUs: -1}, false},
		{reserve.Policy{MaxSeconds: reserve.MaxSpan + 1}, false},
		{reserve.Policy{AheadSeconds: -1}, false},
		{reserve.Policy{AtStart: "pause"}, false},
		{reserve.Policy{WarnSeconds: 2 * 24 * 3600}, false},
		{reserve.Policy{PerMember: reserve.MaxActive + 1}, false},
	}
	for _, tt := range tests {
		if err := tt.p.Check(); (err == nil) != tt.ok {
			t.Errorf("%+v.Check() = %v; want ok %v", tt.p, err, tt.ok)
		}
	}
}

// failingLoad is a store that cannot be read back.
type failingLoad struct{ memStore }

func (*failingLoad) LoadReservations() ([]reserve.Reservation, error) {
	return nil, errors.New("disk error")
}

// A machine whose reservations could not be read back accepts none: it
// would not know what overlaps.
func TestUnreadBookAcceptsNothing(t *testing.T) {
	st := &failingLoad{}
	b := reserve.NewBook(reserve.Config{Node: node, Units: func() []alloc.Unit { return gpus(4) }, Now: func() time.Time { return t0 }, Store: st})
	if err := b.Load(); err == nil {
		t.Fatal("Load of an unreadable store succeeded")
	}
	if r, err := b.Reserve(local, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: 600}); err == nil {
		t.Fatalf("an unread book accepted %+v", r)
	}
	if len(st.recs) != 0 {
		t.Errorf("records written: %v", st.recs)
	}
}

func TestSaveFailureLosesNothing(t *testing.T) {
	f := newFixture(t, reserve.Policy{})
	f.store.fail = errors.New("disk full")
	if _, err := f.book.Reserve(alice, reserve.Request{GPUs: 1, From: t0.Add(time.Hour), Seconds: 600}); err == nil {
		t.Fatal("Reserve with a failing store succeeded")
	}
	if len(f.book.List()) != 0 || len(f.held) != 0 {
		t.Errorf("a reservation that was not saved is held: %v", f.book.List())
	}
}

// TestConflictingRequestsAtOnce: members on both sides of a partition can
// only ask the machine that owns the GPUs (a member that cannot reach it
// gets no reservation, and nothing is accepted elsewhere). Requests for
// the same GPUs that reach it at once are settled by its own order: one
// is accepted, every other is refused naming it.
func TestConflictingRequestsAtOnce(t *testing.T) {
	f := newFixture(t, reserve.Policy{})
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([]reserve.Reservation, n)
	for i := range n {
		wg.Go(func() {
			c := reserve.Caller{ID: fmt.Sprintf("M%02d", i), Role: "member"}
			got[i], errs[i] = f.book.Reserve(c, reserve.Request{GPUIDs: []int{1, 2}, From: t0.Add(time.Hour), Seconds: 3600})
		})
	}
	wg.Wait()
	var won []reserve.Reservation
	for i, err := range errs {
		var e *reserve.Error
		switch {
		case err == nil:
			won = append(won, got[i])
		case !errors.As(err, &e) || e.Rule != reserve.RuleOverlap:
			t.Errorf("request %d: %v; want accepted or refused by %q", i, err, reserve.RuleOverlap)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d accepted; want exactly one", len(won))
	}
	for i, err := range errs {
		if err != nil && !contains(err.Error(), won[0].ID) {
			t.Errorf("refusal %d does not name the winner %s: %v", i, won[0].ID, err)
		}
	}
	if kept, lost := reserve.Settle(f.book.List()); len(lost) != 0 || len(kept) != 1 {
		t.Errorf("the book settles to %d kept, %d lost; want 1, 0", len(kept), len(lost))
	}
}
