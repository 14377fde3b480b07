package reserve

import (
	"fmt"
	"time"
)

// Who may reserve this machine's GPUs (its own user always may).
const (
	WhoMembers = "members" // members, admins and owners of the pool
	WhoAdmins  = "admins"  // admins and owners
	WhoNobody  = "nobody"  // nobody but this machine's own user
)

// What happens at a reservation's start to others' jobs on its GPUs:
// they are stopped; or, requeue, a job with a restart policy goes back to
// its machine's queue (the others are stopped), and the queue grants it
// no GPU of the reservation while it lasts (alloc.Fit passes them over).
const (
	AtStartStop    = "stop"
	AtStartRequeue = "requeue"
)

// Policy is this machine's own say over reservations of its GPUs, kept in
// its local settings with the rest of its policy (jobs.Policy.Reserve).
// The zero value of each field means its default (Effective).
type Policy struct {
	Who          string `json:"who,omitempty"`           // WhoMembers (""), WhoAdmins or WhoNobody
	MaxGPUs      int    `json:"max_gpus,omitempty"`      // GPUs per reservation; 0: all of the machine's
	MaxSeconds   int64  `json:"max_seconds,omitempty"`   // the longest reservation; 0: 24 h
	AheadSeconds int64  `json:"ahead_seconds,omitempty"` // how far ahead one may start; 0: 30 days
	AtStart      string `json:"at_start,omitempty"`      // AtStartStop ("") or AtStartRequeue
	WarnSeconds  int64  `json:"warn_seconds,omitempty"`  // how long before the start others' jobs are told; 0: 15 min
	// PerMember bounds the reservations to come of one member (the
	// machine's own user's are not counted); 0: 8.
	PerMember int `json:"per_member,omitempty"`
}

// Bounds of the policy and of any reservation.
const (
	defaultMax   = 24 * 3600
	defaultAhead = 30 * 24 * 3600
	defaultWarn  = 15 * 60
	defaultPer   = 8
	// MaxSpan bounds any reservation and how far ahead it may start,
	// whatever the policy (a year): the sums of times stay far from
	// overflowing.
	MaxSpan = 366 * 24 * 3600
	// MaxActive bounds the reservations a machine holds that have not
	// ended; MaxKept those it keeps in all (ended, refused, cancelled
	// included), within the record kind's count cap.
	MaxActive = 256
	MaxKept   = 1024
)

// Effective is p with its defaults filled in.
func (p Policy) Effective() Policy {
	if p.Who == "" {
		p.Who = WhoMembers
	}
	if p.MaxSeconds == 0 {
		p.MaxSeconds = defaultMax
	}
	if p.AheadSeconds == 0 {
		p.AheadSeconds = defaultAhead
	}
	if p.AtStart == "" {
		p.AtStart = AtStartStop
	}
	if p.WarnSeconds == 0 {
		p.WarnSeconds = defaultWarn
	}
	if p.PerMember <= 0 {
		p.PerMember = defaultPer
	}
	// A policy read from a file no Check saw stays within the bounds of
	// any reservation: the sums of times never overflow.
	p.MaxSeconds = min(max(p.MaxSeconds, 1), MaxSpan)
	p.AheadSeconds = min(max(p.AheadSeconds, 0), MaxSpan)
	p.WarnSeconds = min(max(p.WarnSeconds, 0), 24*3600)
	return p
}

// Warn is how long before a start others' jobs are told.
func (p Policy) Warn() time.Duration { return time.Duration(p.Effective().WarnSeconds) * time.Second }

// Check refuses a policy that makes no sense, naming the field.
func (p Policy) Check() error {
	switch {
	case p.Who != "" && p.Who != WhoMembers && p.Who != WhoAdmins && p.Who != WhoNobody:
		return fmt.Errorf("reserve %q: use members, admins or nobody", p.Who)
	case p.MaxGPUs < 0 || p.MaxGPUs > 1024:
		return fmt.Errorf("reserve max GPUs %d: 0 (all) to 1024", p.MaxGPUs)
	case p.MaxSeconds < 0 || p.MaxSeconds > MaxSpan:
		return fmt.Errorf("reserve max hours %ds: up to a year", p.MaxSeconds)
	case p.AheadSeconds < 0 || p.AheadSeconds > MaxSpan:
		return fmt.Errorf("reserve ahead %ds: up to a year", p.AheadSeconds)
	case p.AtStart != "" && p.AtStart != AtStartStop && p.AtStart != AtStartRequeue:
		return fmt.Errorf("reserve at start %q: use stop or requeue", p.AtStart)
	case p.WarnSeconds < 0 || p.WarnSeconds > 24*3600:
		return fmt.Errorf("reserve warning %ds: up to a day", p.WarnSeconds)
	case p.PerMember < 0 || p.PerMember > MaxActive:
		return fmt.Errorf("reservations per member %d: 0 (the default, 8) to %d", p.PerMember, MaxActive)
	}
	return nil
}
