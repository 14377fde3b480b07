package lend

import (
	"fmt"
	"strings"
	"time"
)

// Phase is where a lent machine is.
type Phase string

// Phases.
const (
	// Lent: guests may be placed and run.
	Lent Phase = "lent"
	// Kept: the owner's; no guest is placed (none runs).
	Kept Phase = "kept"
	// Warned: the owner's; no guest is placed, running guests were told
	// they yield at Deadline.
	Warned Phase = "warned"
	// Yielded: the owner's; guests are paused or stopped.
	Yielded Phase = "yielded"
)

// Input is what the machine sees at one step.
type Input struct {
	Now time.Time // in the machine's local zone (the lend hours are read on its wall clock)
	// Present says that a signal sees the owner now; Why names it
	// ("your GPU processes", "your desktop is in use", "I'm using it").
	Present bool
	Why     string
	// Using: the window's "I'm using it" switch is on; it takes the
	// machine back in every mode, always included.
	Using bool
	// Running is how many guest jobs run here, not paused.
	Running int
}

// Actions is what one step asks for besides the owner's grant on the GPUs
// (held in every phase but Lent): Warn the running guests, Yield them
// (pause or stop, as Policy.Yield says), or Return the GPUs (resume what
// was paused).
type Actions struct {
	Warn, Yield, Return bool
}

// Status is what a machine says about its lending, to people.
type Status struct {
	Mode  string `json:"mode"` // the policy's mode
	Phase Phase  `json:"phase"`
	// Since is when the phase began; OwnerSeen when a signal last saw the
	// owner (zero: not since the agent started, at Started).
	Since     time.Time `json:"since"`
	OwnerSeen time.Time `json:"owner_seen,omitzero"`
	// Deadline is when warned guests yield (Warned).
	Deadline time.Time `json:"deadline,omitzero"`
	// Why says why the machine is the owner's ("owner present: I'm
	// using it", "outside the lend hours", "lend never").
	Why   string `json:"why,omitempty"`
	Yield string `json:"yield,omitempty"` // pause or stop
	Hours string `json:"hours,omitempty"` // the lend hours ("" any time)
}

// Managed says whether the policy does more than lend always, at any
// time (as machines did before lending): only then is there anything to
// show.
func (s Status) Managed() bool { return s.Mode != Always || s.Hours != "" || s.Phase != Lent }

// Machine is the pure state machine of lending: Step takes what the
// signals say and the time, and returns what to do. It reads no clock.
type Machine struct {
	policy Policy
	hours  Hours
	st     Status
	// starting: the machine has not left the phase it started in. Its
	// owner held the GPUs all along, so a guest running then is one an
	// earlier agent lent it to.
	starting bool
}

// NewMachine starts a machine at now under p (which Check accepted). A
// machine starts as its owner's, the owner last seen at now: guests are
// placed only once Step finds it lent (an Idle machine: after p.After).
// A machine that finds guests running before it first changes phase (its
// agent restarted, their jobs adopted), and no owner, stays lent to them.
func NewMachine(p Policy, now time.Time) *Machine {
	m := &Machine{st: Status{Phase: Kept, Since: now, OwnerSeen: now, Why: "starting"}, starting: true}
	m.SetPolicy(p)
	return m
}

// SetPolicy changes the policy; the next Step applies it. A policy that
// does not parse (Check refuses it) lends nothing.
func (m *Machine) SetPolicy(p Policy) {
	hs, err := ParseHours(p.Hours)
	if err != nil || p.Check() != nil {
		p.Mode, hs = Never, nil
	}
	m.policy, m.hours = p, hs
	m.st.Mode, m.st.Yield, m.st.Hours = p.Mode, p.Yield, p.Hours
}

// Public is s as the machine publishes it: while the owner is present,
// without the time they were last seen (it moves every step).
func (s Status) Public() Status {
	if s.Phase != Lent && strings.HasPrefix(s.Why, PresentPrefix) {
		s.OwnerSeen = time.Time{}
	}
	return s
}

// PresentPrefix starts the Why of a machine its owner is at.
const PresentPrefix = "owner present: "

// Status returns where the machine is.
func (m *Machine) Status() Status { return m.st }

// lent says whether guests may run at in, and if not why.
func (m *Machine) lent(in Input) (bool, string) {
	switch {
	case m.policy.Mode == Never:
		return false, "lend never"
	case in.Using:
		return false, PresentPrefix + Using
	case !m.hours.In(in.Now):
		return false, "outside the lend hours (" + m.policy.Hours + ")"
	case m.policy.Mode == Always:
		return true, ""
	case in.Present:
		return false, PresentPrefix + in.Why
	case in.Now.Sub(m.st.OwnerSeen) < m.policy.After():
		return false, fmt.Sprintf("owner away less than %s", m.policy.After())
	}
	return true, ""
}

// Step advances the machine to in.Now and says what to do. The owner
// waits for no guest beyond the grace: once the machine stops being lent,
// running guests are warned at once and yield at Deadline, and a guest
// still running after that (one that ignored its pause, or was placed
// meanwhile) is told to yield at every step.
func (m *Machine) Step(in Input) Actions {
	if m.starting && in.Running > 0 && !in.Present && !in.Using {
		// Guests run that an earlier agent lent the machine to (its
		// jobs adopted), and the owner is not here: lent it stays.
		m.st.OwnerSeen = time.Time{}
	}
	if in.Present || in.Using {
		m.st.OwnerSeen, m.starting = in.Now, false
	}
	ok, why := m.lent(in)
	var a Actions
	switch {
	case ok && m.st.Phase == Lent:
	case ok:
		a.Return = true // resume what was paused (an earlier run's too), take back a warning
		m.set(Lent, in.Now, "")
	case m.st.Phase == Lent || (m.st.Phase == Kept && in.Running > 0):
		if in.Running > 0 {
			a.Warn = true
			m.set(Warned, in.Now, why)
			m.st.Deadline = in.Now.Add(m.policy.Grace())
		} else {
			m.set(Kept, in.Now, why)
		}
	case m.st.Phase == Warned && !in.Now.Before(m.st.Deadline):
		a.Yield = true
		m.set(Yielded, in.Now, why)
	case m.st.Phase == Yielded && in.Running > 0:
		a.Yield = true
		m.st.Why = why
	default:
		m.st.Why = why
	}
	return a
}

func (m *Machine) set(p Phase, now time.Time, why string) {
	m.starting = false
	m.st.Phase, m.st.Since, m.st.Why = p, now, why
	if p != Warned {
		m.st.Deadline = time.Time{}
	}
}

// Held says whether the owner holds the GPUs: no guest is placed.
func (m *Machine) Held() bool { return m.st.Phase != Lent }

// Wake is when the machine next needs a step without a new signal: a
// warned machine's deadline (zero: none).
func (m *Machine) Wake() time.Time { return m.st.Deadline }
