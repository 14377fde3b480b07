// Package alloc is labpool's one allocation model: what a machine (or a
// Slurm cluster) offers as units, who holds them as grants, and the one
// rule, Fit, that decides whether a request fits and says why every unit
// it passes over was passed over.
//
// A Unit is a whole GPU, a MIG instance, or a cluster's GPUs. A Grant is a
// holder (a job, a reservation, a Slurm job, a process outside labpool,
// the machine's own user) with its units, the share of each it holds and
// its time span. Fit is pure: the node's ledger uses it to decide, and
// planners and previews anywhere in the pool use it, on the grants the
// node publishes, to explain.
//
// alloc imports no other labpool package.
package alloc

import "time"

// Kind is what a Unit is.
type Kind string

const (
	GPU     Kind = "gpu"     // a whole GPU
	MIG     Kind = "mig"     // a MIG instance of a GPU (Parent)
	Cluster Kind = "cluster" // a Slurm cluster's GPUs (Count of them)
)

// Unit is one thing a grant can hold.
type Unit struct {
	ID    string `json:"id"` // GPU or MIG UUID; a cluster's name
	Kind  Kind   `json:"kind"`
	Node  string `json:"node,omitempty"` // the machine (device ID) that offers it
	Index int    `json:"index"`          // the GPU's index (a MIG instance: its GPU's)
	// Parent is a MIG instance's GPU (UUID); Profile its profile ("3g.40gb").
	Parent  string `json:"parent,omitempty"`
	Profile string `json:"profile,omitempty"`
	// MemBytes is the unit's memory; FreeMemBytes what the hardware
	// reading says is free now (unified memory: the system's free memory).
	MemBytes     uint64 `json:"mem_bytes,omitempty"`
	FreeMemBytes uint64 `json:"free_mem_bytes,omitempty"`
	// Count is how many GPUs a Cluster unit has (1 for a GPU or MIG).
	Count int `json:"count,omitempty"`
	// Down, when set, keeps the unit from every new grant and says why
	// ("quarantined: XID 79", "lost", "MIG on").
	Down string `json:"down,omitempty"`
	// MPS: shares of this GPU are capped by an MPS control daemon; false,
	// they are time-sliced and uncapped.
	MPS bool `json:"mps,omitempty"`
}

// count is how many GPUs u has.
func (u Unit) count() int {
	if u.Kind == Cluster {
		return u.Count
	}
	return 1
}

// HolderKind is who holds a grant.
type HolderKind string

const (
	Job         HolderKind = "job"         // a labpool job running (or starting) here
	Queued      HolderKind = "queued"      // a queued job that waited longest, kept units
	Reservation HolderKind = "reservation" // a member's reservation, in its span
	SlurmJob    HolderKind = "slurm"       // a job of the cluster's own scheduler
	External    HolderKind = "external"    // a process outside labpool
	Owner       HolderKind = "owner"       // the machine's own user (lending)
)

// Holder names who holds a grant: for people (Name, Member) and for Fit
// (Kind, ID, Member).
type Holder struct {
	Kind   HolderKind `json:"kind"`
	ID     string     `json:"id,omitempty"`     // job ID, reservation ID, Slurm job ID
	Member string     `json:"member,omitempty"` // the member it is for (device ID)
	Name   string     `json:"name,omitempty"`   // for people: job name, "slurm job 123"
	// Job is the labpool job a Slurm job runs, when labpool launched it
	// through a cluster's agent (Kind SlurmJob only).
	Job string `json:"job,omitempty"`
}

// Same reports whether h and o are one holder.
func (h Holder) Same(o Holder) bool { return h.Kind == o.Kind && h.ID == o.ID }

// Grant is units held by one holder for a span of time.
type Grant struct {
	Holder Holder   `json:"holder"`
	Units  []string `json:"units"` // Unit IDs
	// Share is the fraction of each unit held, in (0, 1]; 0 means 1 (the
	// whole unit). MemBytes caps a share's memory per unit.
	Share    float64 `json:"share,omitempty"`
	MemBytes uint64  `json:"mem_bytes,omitempty"`
	// GPUs is how many of a Cluster unit's GPUs are held.
	GPUs int `json:"gpus,omitempty"`
	// From and Until bound the grant: zero From, since ever; zero Until,
	// until released.
	From  time.Time `json:"from,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// share is g's fraction of each unit.
func (g Grant) share() float64 {
	if g.Share <= 0 || g.Share > 1 {
		return 1
	}
	return g.Share
}

// overlaps reports whether g is in force at any time of [from, until)
// (zero until: open-ended).
func (g Grant) overlaps(from, until time.Time) bool {
	if !g.Until.IsZero() && !g.Until.After(from) {
		return false
	}
	return until.IsZero() || g.From.IsZero() || g.From.Before(until)
}

// Request is what a holder asks for.
type Request struct {
	Holder Holder
	// Count is how many whole GPUs (or, with Share, how many shares of
	// distinct GPUs); Units asks for these units by ID instead; Profile
	// for Count MIG instances of this profile.
	Count   int
	Units   []string
	Profile string
	// Share, in (0, 1), asks for that fraction of a GPU; MemBytes is then
	// the share's memory cap, and otherwise the least memory per GPU.
	Share    float64
	MemBytes uint64
	// Until is when the holder will be done (a job's time limit); zero,
	// never known: then a reservation on a unit from any time on passes it
	// over.
	Until time.Time
	// Node, when set, looks only at that machine's units.
	Node string
	// Pick chooses n of the free units (the node weighs topology and
	// heat); nil takes the first n in Node and Index order.
	Pick func(free []Unit, n int) []Unit
}

// want is how many units r asks for.
func (r Request) want() int {
	if len(r.Units) > 0 {
		return len(r.Units)
	}
	return r.Count
}
