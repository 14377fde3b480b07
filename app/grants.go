package app

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/sync/schema"
)

// KindGrants is the replica record of a machine's ledger (key "";
// data: Allocation), written by that machine only: what it offers as
// alloc.Units and who holds them, as alloc.Grants. Every planner in the
// pool decides on it (alloc.Fit), so the plan says what the machine's
// ledger would.
const KindGrants = schema.KindGrants

// Allocation is a machine's units and the grants on them, as its ledger
// holds them.
type Allocation struct {
	Units  []alloc.Unit  `json:"units"`
	Grants []alloc.Grant `json:"grants"`
}

// Bounds of an Allocation a machine publishes: 64 GPUs with 7 MIG
// instances each, and a few grants on each unit.
const (
	maxAllocUnits  = 512
	maxAllocGrants = 2048
	maxGrantUnits  = 512
)

// ruleGrants names the rule a refused grants record breaks.
const ruleGrants = "a machine's grants are its own"

// decodeAllocation reads the grants record data that origin wrote. A
// machine speaks for its own units only: every unit is origin's (whatever
// Node the data names), and a grant may hold only those units. A record
// over the bounds, with a share out of range, or with a grant of a unit
// it does not list is refused whole, naming the rule: the planner then
// reads the machine's telemetry instead, and says so.
func decodeAllocation(origin string, data []byte) (Allocation, error) {
	var a Allocation
	if err := json.Unmarshal(data, &a); err != nil {
		return Allocation{}, fmt.Errorf("read the grants record of %s: %w", shortID(origin), err)
	}
	refused := func(format string, args ...any) (Allocation, error) {
		return Allocation{}, fmt.Errorf("refused the grants record of %s: %s (rule: %s)", shortID(origin), fmt.Sprintf(format, args...), ruleGrants)
	}
	if len(a.Units) > maxAllocUnits || len(a.Grants) > maxAllocGrants {
		return refused("%d units and %d grants, over %d and %d", len(a.Units), len(a.Grants), maxAllocUnits, maxAllocGrants)
	}
	own := make(map[string]bool, len(a.Units))
	for i := range a.Units {
		u := &a.Units[i]
		if u.ID == "" || own[u.ID] {
			return refused("unit %.64q is empty or listed twice", u.ID)
		}
		own[u.ID] = true
		u.Node = origin
	}
	for _, g := range a.Grants {
		if len(g.Units) > maxGrantUnits {
			return refused("a grant of %d units, over %d", len(g.Units), maxGrantUnits)
		}
		if g.Share < 0 || g.Share > 1 || math.IsNaN(g.Share) || g.GPUs < 0 {
			return refused("a grant of share %v and %s", g.Share, count(g.GPUs, "GPU"))
		}
		for _, u := range g.Units {
			if !own[u] {
				return refused("a grant holds %.64q, not one of its units", u)
			}
		}
	}
	return a, nil
}

// readAllocation completes n with the grants record n's machine wrote
// (and no other machine: the record is read by its origin).
func (r *Reader) readAllocation(ctx context.Context, n *Node) error {
	rec, found, err := r.db.Latest(ctx, n.ID, KindGrants, "")
	if err != nil {
		return fmt.Errorf("read the grants of %s: %w", shortID(n.ID), err)
	}
	if !found {
		return nil
	}
	a, err := decodeAllocation(n.ID, rec.Data)
	if err != nil {
		n.AllocError = err.Error()
		return nil
	}
	n.Alloc = &a
	return nil
}
