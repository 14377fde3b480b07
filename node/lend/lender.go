package lend

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// Guest is a job of someone else than the machine's own user, here.
type Guest struct {
	ID, Name string
	Owner    string // the member who launched it (device ID)
	Paused   bool   // paused by lending
}

// Guests are the guest jobs the lender acts on (node/jobs' Manager).
type Guests interface {
	// Guests lists the guest jobs that run here, paused or not.
	Guests() []Guest
	// Warn tells a guest's owner that it yields at, and why.
	Warn(ctx context.Context, id string, at time.Time, why string) error
	// Pause pauses a guest (its processes stop, its memory stays); an
	// error when it is not paused after.
	Pause(ctx context.Context, id, why string) error
	// Resume resumes a guest that Pause paused, and takes back its
	// warning (a guest warned, not paused, just loses the warning).
	Resume(ctx context.Context, id string) error
	// Vacate stops a guest at once; a job with a restart policy goes
	// back to the queue.
	Vacate(ctx context.Context, id, why string) error
}

// Holder keeps the grants that others than jobs hold (the job ledger's
// SetHeld): here, the owner's grant on every GPU.
type Holder interface {
	SetHeld(source string, gs []alloc.Grant)
}

// Signal says whether the owner is here now, and by what sign; a signal
// that cannot tell says false.
type Signal func(ctx context.Context) (present bool, why string)

// HeldSource is the source of the owner's grant in the job ledger.
const HeldSource = "lend"

// Using is the sign of the window's "I'm using it" switch.
const Using = "I'm using it"

// Config configures a Lender.
type Config struct {
	Node string          // this machine's device ID: the owner's grant is its
	GPUs func() []string // the units the owner's grant holds (GPU UUIDs)
	// Tick is how often the signals are read (1 s): the owner is noticed
	// at most a Tick after a signal sees them.
	Tick time.Duration
	Log  *slog.Logger
	// Now reads the clock (time.Now; a benchmark steps a fake one).
	Now func() time.Time
	// Policy, when set, is read at every step (the machine's policy as
	// `labpool policy` last set it); a change applies at once.
	Policy func() Policy
}

// DefaultConfig reads the signals every second.
func DefaultConfig() Config {
	return Config{Tick: time.Second, Log: slog.New(slog.DiscardHandler), Now: time.Now}
}

// Lender runs the Machine over the owner-present signals and acts on
// the guests.
type Lender struct {
	cfg     Config
	guests  Guests
	hold    Holder
	signals []Signal
	wake    chan struct{}

	mu      sync.Mutex // guards the fields below
	m       *Machine
	policy  Policy // as last applied
	using   bool
	held    string          // the owner grant's name as last set ("" none)
	pausing map[string]bool // guests told to pause in this taking back
}

// New returns a Lender under policy p, starting as the owner's.
func New(cfg Config, p Policy, g Guests, h Holder, signals ...Signal) *Lender {
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.GPUs == nil {
		cfg.GPUs = func() []string { return nil }
	}
	return &Lender{cfg: cfg, guests: g, hold: h, signals: signals, wake: make(chan struct{}, 1),
		m: NewMachine(p, cfg.Now()), policy: p, pausing: map[string]bool{}}
}

// SetPolicy applies p from the next step, at once.
func (l *Lender) SetPolicy(p Policy) {
	l.mu.Lock()
	l.m.SetPolicy(p)
	l.policy = p
	l.mu.Unlock()
	l.poke()
}

// SetUsing turns the window's "I'm using it" switch on or off; it is
// acted on at once.
func (l *Lender) SetUsing(on bool) {
	l.mu.Lock()
	l.using = on
	l.mu.Unlock()
	l.poke()
}

// State is a lender's status and its switch.
type State struct {
	Status
	Using bool `json:"using"` // the "I'm using it" switch is on
}

// State returns where the lender is.
func (l *Lender) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return State{Status: l.m.Status(), Using: l.using}
}

func (l *Lender) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run steps the machine every Tick, at a warned machine's deadline and
// whenever the switch or the policy changes, until ctx is cancelled. On
// return the owner's grant is left as it was: an agent that stops keeps
// the machine its owner's until it starts again.
func (l *Lender) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-l.wake:
		}
		l.Step(ctx)
		t.Reset(l.Next())
	}
}

// Next is how long Run waits after a step before the next one, a signal
// aside: to the next multiple of Tick on the wall clock (the beat the
// agent's other periodic work wakes on, internal/beat), or less to a
// warned machine's deadline.
func (l *Lender) Next() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.Now()
	d := now.Truncate(l.cfg.Tick).Add(l.cfg.Tick).Sub(now)
	if w := l.m.Wake(); !w.IsZero() {
		d = min(d, max(w.Sub(now), 0))
	}
	return d
}

// present reads the signals, only where the policy asks them (idle): a
// signal may cost (logind's is a loginctl run).
func (l *Lender) present(ctx context.Context) (bool, string) {
	l.mu.Lock()
	idle := l.policy.Mode == Idle
	l.mu.Unlock()
	if !idle {
		return false, ""
	}
	for _, s := range l.signals {
		if ok, why := s(ctx); ok {
			return true, why
		}
	}
	return false, ""
}

// Step reads the signals and the guests once and acts.
func (l *Lender) Step(ctx context.Context) {
	present, why := l.present(ctx)
	l.mu.Lock()
	using := l.using
	l.mu.Unlock()
	guests := l.guests.Guests()
	var running []Guest
	for _, g := range guests {
		if !g.Paused {
			running = append(running, g)
		}
	}
	l.mu.Lock()
	if l.cfg.Policy != nil {
		if p := l.cfg.Policy(); p != l.policy {
			l.m.SetPolicy(p)
			l.policy = p
		}
	}
	a := l.m.Step(Input{Now: l.cfg.Now(), Present: present, Why: why, Using: using, Running: len(running)})
	st := l.m.Status()
	held := l.m.Held()
	l.mu.Unlock()
	l.setHeld(held, st)
	switch {
	case a.Warn:
		for _, g := range running {
			if err := l.guests.Warn(ctx, g.ID, st.Deadline, st.Why); err != nil {
				l.cfg.Log.Warn("lend: warn a guest", "job", g.ID, "err", err)
			}
		}
	case a.Yield:
		for _, g := range running {
			l.yield(ctx, g, st)
		}
	case !held:
		// Lent: resume what lending paused (a.Return), and retry a resume
		// that failed at an earlier step.
		l.giveBack(ctx, guests, a.Return)
	}
}

// setHeld sets the owner's grant on every GPU while the machine is held,
// and takes it away when it is lent.
func (l *Lender) setHeld(held bool, st Status) {
	name := ""
	if held {
		name = holdName(st)
	}
	l.mu.Lock()
	same := name == l.held
	l.held = name
	l.mu.Unlock()
	if same {
		return
	}
	if !held {
		l.hold.SetHeld(HeldSource, nil)
		return
	}
	l.hold.SetHeld(HeldSource, []alloc.Grant{{
		Holder: alloc.Holder{Kind: alloc.Owner, ID: HeldSource, Member: l.cfg.Node, Name: name},
		Units:  l.cfg.GPUs(),
	}})
}

// holdName says why the owner holds the GPUs, to whoever a grant is
// refused: "the machine's owner: owner present: I'm using it (guests
// pause at 14:32)".
func holdName(st Status) string {
	s := "the machine's owner: " + st.Why
	if st.Phase == Warned {
		s += fmt.Sprintf(" (guests %s at %s)", yieldVerb(st.Yield), st.Deadline.Format("15:04"))
	}
	return s
}

func yieldVerb(y string) string {
	if y == Stop {
		return "stop"
	}
	return "pause"
}

// yield pauses or stops a running guest once the grace is over. A guest
// still running after it was told to pause (its pause failed, or it
// ignored it) is stopped: the owner waits for no guest beyond the grace.
func (l *Lender) yield(ctx context.Context, g Guest, st Status) {
	why := "the machine's owner took it back: " + st.Why
	l.mu.Lock()
	again := l.pausing[g.ID]
	l.pausing[g.ID] = true
	l.mu.Unlock()
	if st.Yield == Pause && !again {
		err := l.guests.Pause(ctx, g.ID, why)
		if err == nil {
			l.cfg.Log.Info("lend: guest paused", "job", g.ID, "owner", g.Owner, "why", st.Why)
			return
		}
		l.cfg.Log.Warn("lend: pause a guest: stopping it instead", "job", g.ID, "err", err)
	}
	if err := l.guests.Vacate(ctx, g.ID, why); err != nil {
		l.cfg.Log.Error("lend: stop a guest", "job", g.ID, "err", err)
		return
	}
	l.cfg.Log.Info("lend: guest stopped", "job", g.ID, "owner", g.Owner, "why", st.Why)
}

// giveBack resumes the guests lending paused; returned: the machine was
// just lent again.
func (l *Lender) giveBack(ctx context.Context, guests []Guest, returned bool) {
	if returned {
		l.mu.Lock()
		clear(l.pausing)
		l.mu.Unlock()
	}
	for _, g := range guests {
		if !g.Paused && !returned { // just lent again: a warned guest's warning goes too
			continue
		}
		if err := l.guests.Resume(ctx, g.ID); err != nil {
			l.cfg.Log.Warn("lend: resume a guest", "job", g.ID, "err", err)
		}
	}
}
