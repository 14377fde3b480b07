package lend

import (
	"fmt"
	"time"
)

// Modes: when this machine is lent to the pool.
const (
	Never  = "never"  // guests never run here
	Always = "always" // guests run in the lend hours whether the owner is here or not (the default, as before lending)
	Idle   = "idle"   // guests run in the lend hours once the owner has been away After
)

// Yields: what happens to guests once the grace is over.
const (
	Pause = "pause" // docker pause: their memory stays on the GPUs, their compute stops
	Stop  = "stop"  // stopped; a job with a restart policy goes back to the queue
)

// Bounds of a policy's durations.
const (
	MinAfter = time.Minute
	MaxAfter = 7 * 24 * time.Hour
	MaxGrace = 24 * time.Hour
)

// Policy is when this machine is lent, and how it is taken back.
type Policy struct {
	Mode string `json:"mode"` // Never, Always or Idle
	// AfterSeconds is how long the owner must have been away before
	// guests run (Idle).
	AfterSeconds int `json:"after_seconds"`
	// Yield is what guests get after the grace: Pause or Stop.
	Yield string `json:"yield"`
	// GraceSeconds is how long guests have, once warned, before they
	// yield: the most the owner ever waits.
	GraceSeconds int `json:"grace_seconds"`
	// Hours are when guests may run, in the machine's local zone
	// ("mon-fri 19:00-08:00, sat-sun"); "" is any time.
	Hours string `json:"hours,omitempty"`
}

// DefaultPolicy is a machine lent always, as before lending existed, with
// HTCondor's desktop times ready for --lend idle: 15 min away, 10 min of
// grace, guests paused.
func DefaultPolicy() Policy {
	return Policy{Mode: Always, AfterSeconds: 15 * 60, Yield: Pause, GraceSeconds: 10 * 60}
}

// After is how long the owner must have been away.
func (p Policy) After() time.Duration { return time.Duration(p.AfterSeconds) * time.Second }

// Grace is how long guests have once warned.
func (p Policy) Grace() time.Duration { return time.Duration(p.GraceSeconds) * time.Second }

// Managed says whether the lender has anything to do: a machine always
// lent at any time is the pool's, as before lending.
func (p Policy) Managed() bool { return p.Mode == Never || p.Mode == Idle || p.Hours != "" }

// RuleError is a policy refused by the rule it names.
type RuleError struct {
	Rule   string // "policy lend-hours", "policy grace"
	Detail string
}

func (e *RuleError) Error() string { return e.Rule + ": " + e.Detail }

func refuse(rule, format string, a ...any) error {
	return &RuleError{Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

// Check refuses a policy that makes no sense, naming the rule.
func (p Policy) Check() error {
	switch {
	case p.Mode != Never && p.Mode != Always && p.Mode != Idle:
		return refuse("policy lend", "%q: use never, always or idle", p.Mode)
	case p.After() < MinAfter || p.After() > MaxAfter:
		return refuse("policy lend-after", "%s: between 1m and 7 days (the owner is away that long before guests run)", p.After())
	case p.Yield != Pause && p.Yield != Stop:
		return refuse("policy yield", "%q: use pause or stop", p.Yield)
	case p.GraceSeconds <= 0 || p.Grace() > MaxGrace:
		return refuse("policy grace", "%s: above 0 and at most 24h (the most the owner waits for a guest)", p.Grace())
	}
	if _, err := ParseHours(p.Hours); err != nil {
		return err
	}
	return nil
}
