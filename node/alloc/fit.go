package alloc

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reason is why Fit passed a unit over.
type Reason string

const (
	Down      Reason = "down"       // quarantined, lost, MIG on: Unit.Down says
	Held      Reason = "held"       // a whole grant of another holder, in force
	Kept      Reason = "kept"       // kept for a queued job waiting longest
	Reserved  Reason = "reserved"   // another member's reservation crosses the request's span
	OwnerUse  Reason = "owner"      // the machine's own user has it back
	Outside   Reason = "external"   // a process outside labpool
	Shared    Reason = "shared"     // held in shares, and the request is for a whole unit
	ShareFull Reason = "share-full" // the shares held leave too little
	TooSmall  Reason = "too-small"  // less memory than asked
	Busy      Reason = "busy"       // a cluster's GPUs, too few free
)

// Pass is one unit Fit passed over, and why.
type Pass struct {
	Unit   Unit   `json:"unit"`
	Reason Reason `json:"reason"`
	// By is the grant's holder that kept it (Held, Kept, Reserved,
	// OwnerUse, Outside); From and Until its span.
	By    Holder    `json:"by,omitzero"`
	From  time.Time `json:"from,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Free is what is left: the share (ShareFull), the memory in bytes
	// (TooSmall), the GPUs (Busy).
	Free float64 `json:"free,omitempty"`
}

// Decision is Fit's answer.
type Decision struct {
	Fits  bool   `json:"fits"`
	Node  string `json:"node,omitempty"`  // where the chosen units are
	Units []Unit `json:"units,omitempty"` // chosen, when Fits
	// GPUs is how many of a Cluster unit; Share and MemBytes what each
	// chosen unit is granted (Share 0: whole).
	GPUs     int     `json:"gpus,omitempty"`
	Share    float64 `json:"share,omitempty"`
	MemBytes uint64  `json:"mem_bytes,omitempty"`
	Want     int     `json:"want"`
	// Free is how many of the units asked for were free (on every
	// machine together): when d does not fit, fewer than Want on each.
	Free   int    `json:"free"`
	Passed []Pass `json:"passed,omitempty"` // every unit passed over, in the units' order
}

// Grant is the grant d makes to h from at until until.
func (d Decision) Grant(h Holder, at, until time.Time) Grant {
	g := Grant{Holder: h, Share: d.Share, MemBytes: d.MemBytes, GPUs: d.GPUs, From: at, Until: until}
	for _, u := range d.Units {
		g.Units = append(g.Units, u.ID)
	}
	return g
}

// held is what the grants in force say of one unit, for one request.
type held struct {
	whole   *Grant  // a whole grant of another holder
	share   float64 // shares of other holders
	mem     uint64  // their memory caps
	gpus    int     // a cluster's GPUs held
	reserve *Grant  // another member's reservation crossing the span
	mine    bool    // the requester's own reservation covers at
}

// Fit decides whether r fits units at time at, given grants. It is pure:
// the same arguments always give the same Decision. Units are looked at
// machine by machine (in the order each Node first appears); the first
// machine where r fits whole gives the answer. A holder's own grants never
// keep it from a unit (asking again keeps what it holds).
func Fit(units []Unit, grants []Grant, r Request, at time.Time) Decision {
	d := Decision{Want: r.want(), Share: shareOf(r)}
	if d.Share < 1 {
		d.MemBytes = r.MemBytes
	} else {
		d.Share = 0
	}
	if d.Want <= 0 {
		d.Fits, d.Want = true, 0
		return d
	}
	byUnit := index(grants, r, at)
	var nodes []string
	free := map[string][]Unit{}
	for _, u := range units {
		if !asked(u, r) {
			continue
		}
		if p, ok := pass(u, byUnit[u.ID], r, shareOf(r)); ok {
			d.Passed = append(d.Passed, p)
			continue
		}
		if u.Kind == Cluster {
			if !d.Fits {
				d.Fits, d.Node, d.Units, d.GPUs, d.Share, d.MemBytes = true, u.Node, []Unit{u}, d.Want, 0, 0
			}
			continue
		}
		d.Free++
		if _, seen := free[u.Node]; !seen {
			nodes = append(nodes, u.Node)
		}
		free[u.Node] = append(free[u.Node], u)
	}
	if d.Fits {
		return d
	}
	for _, n := range nodes {
		f := free[n]
		if len(r.Units) > 0 && len(f) < len(r.Units) || len(f) < d.Want {
			continue
		}
		if d.Share > 0 {
			slices.SortStableFunc(f, func(a, b Unit) int { return packFirst(byUnit[a.ID], byUnit[b.ID]) })
		}
		d.Fits, d.Node, d.Units = true, n, pick(r, f, d.Want)
		return d
	}
	return d
}

// shareOf is the fraction of each unit r asks for (1: whole).
func shareOf(r Request) float64 {
	if r.Share > 0 && r.Share < 1 {
		return r.Share
	}
	return 1
}

// packFirst orders GPUs already shared before empty ones, so shares fill
// one GPU before they split another.
func packFirst(a, b held) int {
	switch {
	case a.share > 0 && b.share == 0:
		return -1
	case a.share == 0 && b.share > 0:
		return 1
	}
	return 0
}

func pick(r Request, free []Unit, n int) []Unit {
	if r.Pick != nil {
		if got := r.Pick(slices.Clone(free), n); len(got) == n {
			return got
		}
	}
	return slices.Clone(free[:n])
}

// asked reports whether u is among what r looks at.
func asked(u Unit, r Request) bool {
	switch {
	case r.Node != "" && u.Node != r.Node:
		return false
	case len(r.Units) > 0:
		return slices.Contains(r.Units, u.ID)
	case r.Profile != "":
		return u.Kind == MIG && u.Profile == r.Profile
	case u.Kind == MIG:
		return false
	case u.Kind == Cluster:
		return r.Share == 0 || r.Share >= 1
	}
	return true
}

// index gathers, per unit, what the grants other than r's holder's say for
// a request at at.
func index(grants []Grant, r Request, at time.Time) map[string]held {
	out := map[string]held{}
	for i := range grants {
		g := &grants[i]
		if g.Holder.Same(r.Holder) && r.Holder.ID != "" {
			continue
		}
		if g.Holder.Kind == Owner && g.Holder.Member != "" && g.Holder.Member == r.Holder.Member {
			continue // the machine's own user's jobs run on what they hold back from guests
		}
		reservation := g.Holder.Kind == Reservation
		if r.Holder.Kind == Reservation && !reservation {
			continue // jobs on the units are told and stopped at its start
		}
		for _, id := range g.Units {
			h := out[id]
			switch {
			case reservation && g.Holder.Member == r.Holder.Member && r.Holder.Member != "":
				h.mine = h.mine || g.overlaps(at, at.Add(time.Nanosecond))
			case reservation:
				if g.overlaps(at, r.Until) && (h.reserve == nil || g.From.Before(h.reserve.From)) {
					h.reserve = g
				}
			case !g.overlaps(at, at.Add(time.Nanosecond)):
			case g.GPUs > 0:
				h.gpus = min(h.gpus+min(g.GPUs, 1<<20), 1<<30) // counts from the network
			case g.share() < 1:
				h.share += g.share()
				h.mem = addSat(h.mem, g.MemBytes)
			case h.whole == nil:
				h.whole = g
			}
			out[id] = h
		}
	}
	return out
}

// pass says why u cannot go to r, if it cannot.
func pass(u Unit, h held, r Request, share float64) (Pass, bool) {
	p := Pass{Unit: u}
	switch {
	case u.Down != "":
		p.Reason = Down
	case h.reserve != nil:
		p.Reason, p.By, p.From, p.Until = Reserved, h.reserve.Holder, h.reserve.From, h.reserve.Until
	case h.whole != nil:
		p.Reason, p.By, p.From, p.Until = holdReason(h.whole.Holder.Kind), h.whole.Holder, h.whole.From, h.whole.Until
	case u.Kind == Cluster:
		if free := u.count() - h.gpus; free < r.want() {
			p.Reason, p.Free = Busy, float64(max(free, 0))
		}
	case share >= 1 && h.share > 0:
		p.Reason, p.Free = Shared, 1-h.share
	case share < 1 && h.share+share > 1+1e-9:
		p.Reason, p.Free = ShareFull, max(1-h.share, 0)
	case share < 1 && r.MemBytes > 0 && addSat(h.mem, r.MemBytes) > u.MemBytes:
		p.Reason, p.Free = TooSmall, float64(u.MemBytes-min(h.mem, u.MemBytes))
	case share >= 1 && r.MemBytes > 0 && u.MemBytes < r.MemBytes:
		p.Reason, p.Free = TooSmall, float64(u.MemBytes)
	}
	if r.Holder.Kind == Reservation && p.Reason != Down && p.Reason != Reserved {
		return Pass{}, false
	}
	return p, p.Reason != ""
}

// holdReason is the Reason a whole grant of kind k gives.
func holdReason(k HolderKind) Reason {
	switch k {
	case Queued:
		return Kept
	case Owner:
		return OwnerUse
	case External:
		return Outside
	}
	return Held
}

// String says p for people: "GPU 2: job train of alice".
func (p Pass) String() string {
	what := fmt.Sprintf("GPU %d", p.Unit.Index)
	switch p.Unit.Kind {
	case MIG:
		what = fmt.Sprintf("MIG %s on GPU %d", p.Unit.Profile, p.Unit.Index)
	case Cluster:
		what = "cluster " + p.Unit.ID
	}
	return what + ": " + p.Why()
}

// Why is p's reason for people, without the unit.
func (p Pass) Why() string {
	by := p.By.Name
	if by == "" {
		by = short(p.By.ID)
	}
	if p.By.Member != "" {
		by += " of " + short(p.By.Member)
	}
	switch p.Reason {
	case Down:
		return p.Unit.Down
	case Held:
		return string(p.By.Kind) + " " + by
	case Kept:
		return "kept for queued job " + by + ", waiting the longest"
	case Reserved:
		s := "reserved for " + short(p.By.Member) + " from " + p.From.Format("Mon 2 Jan 15:04")
		if !p.Until.IsZero() {
			s += " to " + p.Until.Format("Mon 15:04")
		}
		return s
	case OwnerUse:
		return "its owner is using it"
	case Outside:
		return "a process outside labpool"
	case Shared:
		return fmt.Sprintf("shared (%.0f%% free), and a whole GPU was asked", 100*p.Free)
	case ShareFull:
		return fmt.Sprintf("%.0f%% of it is free, less than the share asked", 100*p.Free)
	case TooSmall:
		return fmt.Sprintf("%d MiB free, less than asked", uint64(p.Free)>>20)
	case Busy:
		return fmt.Sprintf("%d GPUs free, fewer than asked", int(p.Free))
	}
	return string(p.Reason)
}

// Why says, in one sentence for people, why d does not fit ("" when it
// does): the units passed over for the same reason are named once.
func (d Decision) Why() string {
	if d.Fits {
		return ""
	}
	if len(d.Passed) == 0 {
		return fmt.Sprintf("%d asked, and no unit matches", d.Want)
	}
	var parts []string
	var idx []string
	for i, p := range d.Passed {
		idx = append(idx, fmt.Sprint(p.Unit.Index))
		why := p.Why()
		if i+1 < len(d.Passed) && d.Passed[i+1].Why() == why && d.Passed[i+1].Unit.Node == p.Unit.Node && d.Passed[i+1].Unit.Kind == p.Unit.Kind {
			continue
		}
		name := "GPU " + idx[0]
		if len(idx) > 1 {
			name = "GPUs " + strings.Join(idx, ", ")
		}
		if p.Unit.Kind == Cluster {
			name = "cluster " + p.Unit.ID
		}
		parts, idx = append(parts, name+": "+why), nil
	}
	return fmt.Sprintf("%d asked: %s", d.Want, strings.Join(parts, "; "))
}

func short(id string) string {
	if len(id) > 9 {
		return id[:9]
	}
	return id
}

// addSat is a+b, or the largest uint64 where that overflows (a grant's
// memory cap comes from the network).
func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// Free is how many of u's GPUs no grant in force at at holds (for a GPU or
// a MIG instance: 1 or 0; shares held count as held): what Fit would give
// a request for a count from u alone. Down units have none free.
func Free(u Unit, grants []Grant, at time.Time) int {
	if u.Down != "" {
		return 0
	}
	h := index(grants, Request{}, at)[u.ID]
	switch {
	case h.whole != nil:
		return 0
	case u.Kind == Cluster:
		return max(u.count()-h.gpus, 0)
	case h.share > 0:
		return 0
	}
	return 1
}
