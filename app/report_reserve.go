package app

import (
	"context"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/reserve"
)

// Reservations held but unused count: a member who reserves GPUs keeps
// them from everyone else for the reservation's span, so the report
// charges them the GPU-hours reserved that their own jobs did not use
// (ReportRow.ReservedUnusedHours), apart from the hours their jobs held.

// ReservationSource gives the reservation grants (alloc.Grant, Holder.Kind
// alloc.Reservation) in force at any time of [from, to): the daemon wires
// the source that keeps them. Grants of another kind are not counted.
type ReservationSource interface {
	Reservations(from, to time.Time) []alloc.Grant
}

// RuleReservationUnit: a reservation counts only units the pool's machines
// (or clusters) list; the others cannot be placed.
const RuleReservationUnit = "reservation units the pool lists"

// unitPlace is where a unit is: its machine and GPU index (a cluster's
// GPUs: clusterIndex), the fraction of that GPU it is (a MIG instance),
// and for a cluster the GPUs it has.
type unitPlace struct {
	node     string
	index    int
	fraction float64
	cluster  int
}

// unitPlaces maps each unit ID the nodes list (GPU and MIG UUIDs, cluster
// names) to its place.
func unitPlaces(nodes []Node, w weights) map[string]unitPlace {
	out := map[string]unitPlace{}
	for _, n := range nodes {
		if n.Cluster != nil && n.Cluster.Name != "" {
			out[n.Cluster.Name] = unitPlace{node: n.ID, index: clusterIndex, fraction: 1, cluster: w.clusters[n.ID]}
		}
		for _, g := range n.GPUs {
			out[g.UUID] = unitPlace{node: n.ID, index: g.Index, fraction: 1}
		}
	}
	for id, p := range w.mig {
		out[id] = unitPlace{node: p.node, index: p.index, fraction: min(1, p.fraction)}
	}
	return out
}

// unusedHold is time a reservation held a unit that its member's jobs did
// not use: seconds, in GPUs (a unit's fraction or a cluster's GPUs).
type unusedHold struct {
	holder  alloc.Holder
	node    string
	index   int
	seconds float64
}

// reservedUnused is, for each reservation of gs and each of its units,
// the GPU-seconds in [since, until) it held that its member's jobs (js,
// owners verified; the jobs of any device of the member's person, as
// owners says) did not use on that unit; and the units it could not place.
// A reservation with no end is held to until.
func reservedUnused(gs []alloc.Grant, places map[string]unitPlace, js []reportJob, owners map[string]personRef, since, until time.Time) ([]unusedHold, []ReportAdjustment) {
	var out []unusedHold
	var adjusted []ReportAdjustment
	for _, g := range gs {
		if g.Holder.Kind != alloc.Reservation {
			continue
		}
		a, b := later(g.From, since), until
		if !g.Until.IsZero() {
			b = earlier(g.Until, until)
		}
		if !b.After(a) {
			continue
		}
		share := g.Share
		if share <= 0 || share > 1 {
			share = 1
		}
		var once dedup[string]
		for i, id := range g.Units {
			if once.repeat(g.Units, i) {
				continue // each unit once
			}
			p, ok := places[id]
			if !ok {
				adjusted = append(adjusted, ReportAdjustment{Node: "", Job: g.Holder.ID, Rule: RuleReservationUnit,
					Detail: fmt.Sprintf("unit %s of reservation %s is not listed", id, g.Holder.ID)})
				continue
			}
			gpus := share * p.fraction
			if p.index == clusterIndex { // Grant.GPUs of the cluster's (none: all), at most its own
				gpus = float64(p.cluster)
				if g.GPUs > 0 {
					gpus = float64(min(g.GPUs, p.cluster))
				}
			}
			held := gpus * seconds(a, b)
			used := min(held, usedBy(js, g.Holder.Member, owners, p, a, b))
			if held-used > 0 {
				out = append(out, unusedHold{holder: g.Holder, node: p.node, index: p.index, seconds: held - used})
			}
		}
	}
	return out, adjusted
}

// usedBy is the GPU-seconds of [a, b) that the jobs of js of member, or
// of another device of its person (owners), held at place p.
func usedBy(js []reportJob, member string, owners map[string]personRef, p unitPlace, a, b time.Time) float64 {
	if member == "" {
		return 0
	}
	person, ok := owners[member]
	used := 0.0
	for _, j := range js {
		mine := j.Owner == member || (ok && j.Owner != "" && owners[j.Owner].ID == person.ID)
		if !mine || j.Node != p.node {
			continue
		}
		end := j.End
		if end.IsZero() {
			end = b
		}
		span := overlap(j.Start, end, a, b)
		if span <= 0 {
			continue
		}
		if p.index == clusterIndex {
			used += float64(j.Cluster) * span
			continue
		}
		for k, idx := range j.GPUs {
			if idx == p.index {
				w := 1.0
				if j.Weights != nil {
					w = j.Weights[k]
				}
				used += w * span
			}
		}
	}
	return used
}

// replicaReservations is the ReservationSource of the pool's replica: the
// accepted reservations every machine published of its own GPUs (a record
// naming GPUs that are not its origin's holds nothing, Reader.Reservations).
type replicaReservations struct{ r *Reader }

func (s replicaReservations) Reservations(from, to time.Time) []alloc.Grant {
	rs, err := s.r.Reservations(context.Background())
	if err != nil {
		return nil
	}
	var out []alloc.Grant
	for _, v := range rs {
		if v.Problem != "" || v.State != reserve.Accepted || !v.Until.After(from) || !v.From.Before(to) {
			continue
		}
		out = append(out, v.Grant())
	}
	return out
}
