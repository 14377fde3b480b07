// Package reserve keeps the reservations of this machine's GPUs: a member
// asks the machine (the one authority over its GPUs) for some of its GPUs
// over a span of time; the machine checks its own policy (Policy) and the
// reservations it holds (alloc.Fit with a Reservation holder), and keeps
// what it accepts in its Book, which its Store publishes as this machine's
// own replicated records. The jobs ledger honours the Book's grants
// (Book.Grants, fed to jobs.Ledger.SetHeld), and Enforce tells and stops
// others' jobs on reserved GPUs at a reservation's start.
//
// Conflicts are settled by one rule: the machine's own acceptance order
// (Reservation.Seq, then ID), never a time a signer chose. A reservation
// that loses (two records for the same GPUs after a restore) stays in the
// Book as refused, with the rule, and its member is told.
//
// reserve imports no labpool package but node/alloc.
package reserve

import (
	"fmt"
	"time"

	"github.com/labpool/labpool/node/alloc"
)

// State is where a reservation stands.
type State string

const (
	Accepted  State = "accepted"  // the machine holds the GPUs for it over its span
	Refused   State = "refused"   // lost to an earlier one (Rule says why)
	Cancelled State = "cancelled" // cancelled by its member, an admin or the machine's user
)

// Reservation is one reservation of this machine's GPUs, as its record
// carries it (key: ID). The machine that writes the record is the one
// whose GPUs it holds: a reader takes the node from the record's origin,
// never from its data.
type Reservation struct {
	ID     string    `json:"id"`
	Seq    uint64    `json:"seq"`    // the machine's acceptance order
	Member string    `json:"member"` // who it is for (device ID)
	By     string    `json:"by"`     // who asked (device ID)
	Units  []string  `json:"units"`  // GPU UUIDs
	GPUs   []int     `json:"gpus"`   // and their indexes
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
	// Made is when the machine accepted it (its own clock: for people,
	// never for a rule).
	Made  time.Time `json:"made"`
	State State     `json:"state"`
	// Rule and Reason say why a reservation was refused or cancelled.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Grant is r as the ledger's and Fit's grant.
func (r Reservation) Grant() alloc.Grant {
	return alloc.Grant{Holder: r.Holder(), Units: append([]string(nil), r.Units...), From: r.From, Until: r.Until}
}

// Holder is r as a grant's holder.
func (r Reservation) Holder() alloc.Holder {
	return alloc.Holder{Kind: alloc.Reservation, ID: r.ID, Member: r.Member, Name: "reservation " + r.ID}
}

// Active says whether r holds its GPUs at any time from now on.
func (r Reservation) Active(now time.Time) bool {
	return r.State == Accepted && r.Until.After(now)
}

// Request is what a member asks for (network input, see DecodeRequest).
type Request struct {
	// Member the reservation is for; "" the caller.
	Member string `json:"member,omitempty"`
	// GPUs is how many GPUs, any free ones; GPUIDs these, by index.
	GPUs   int       `json:"gpus,omitempty"`
	GPUIDs []int     `json:"gpu_ids,omitempty"`
	From   time.Time `json:"from"`
	// Seconds is how long, from From.
	Seconds int64 `json:"seconds"`
}

// Rules a request or a record breaks, as refusals name them.
const (
	RuleWho      = "reserve: who may"
	RuleOther    = "reserve: for another member"
	RuleForm     = "reserve: request"
	RulePast     = "reserve: in the past"
	RuleAhead    = "reserve: too far ahead"
	RuleLong     = "reserve: longer than allowed"
	RuleGPUs     = "reserve: over policy"
	RuleUnknown  = "reserve: unknown GPU"
	RuleOverlap  = "reserve: overlapping"
	RuleDown     = "reserve: GPU down"
	RuleTooMany  = "reserve: too many"
	RuleCancel   = "reserve: who may cancel"
	RuleNotFound = "reserve: no such reservation"
)

// Error is a refusal, naming the rule.
type Error struct {
	Rule, Detail string
	Forbidden    bool // an authorization rule (HTTP 403); else bad input (400)
	NotFound     bool // HTTP 404
}

func (e *Error) Error() string { return fmt.Sprintf("refused by rule %q: %s", e.Rule, e.Detail) }

func refuse(rule, format string, a ...any) error {
	return &Error{Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

func forbid(rule, format string, a ...any) error {
	return &Error{Rule: rule, Detail: fmt.Sprintf(format, a...), Forbidden: true}
}
