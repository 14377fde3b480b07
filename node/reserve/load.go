package reserve

import (
	"fmt"
	"slices"
	"time"
)

// keepEnded is how long an ended, refused or cancelled reservation stays
// in the book (and its record in the replica: the daemon prunes after).
const keepEnded = 7 * 24 * time.Hour

// Load fills the book from the store, as at start: it settles conflicts
// among the records (Settle) and saves the losers as refused, telling
// their members. Until a Load succeeds the book accepts no reservation: it
// would not know which it holds.
func (b *Book) Load() error {
	rs, err := b.cfg.Store.LoadReservations()
	if err != nil {
		return fmt.Errorf("load reservations: %w", err)
	}
	kept, lost := Settle(rs)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loaded = true
	for _, r := range kept {
		b.setLocked(r)
		b.seq = max(b.seq, r.Seq)
	}
	for _, r := range lost {
		if err := b.cfg.Store.SaveReservation(r); err != nil {
			return fmt.Errorf("save reservation %s: %w", r.ID, err)
		}
		b.cfg.Log.Warn("reservation lost to an earlier one", "reservation", r.ID, "member", r.Member, "reason", r.Reason)
		if b.cfg.Lost != nil {
			b.cfg.Lost(r)
		}
	}
	b.pruneLocked(b.cfg.Now())
	b.changedLocked()
	return nil
}

// Settle applies the one rule to reservation records that may conflict
// (two stores merged, a restore over newer records): in the machine's
// acceptance order (Seq, then ID), an accepted reservation that shares a
// GPU and a moment with an earlier accepted one loses, and is returned in
// lost as refused, naming the winner. A time in a record never decides.
// A record seen twice under one ID keeps its later state (cancelled or
// refused over accepted: nothing is given back).
func Settle(rs []Reservation) (kept, lost []Reservation) {
	byID := map[string]Reservation{}
	for _, r := range rs {
		if o, ok := byID[r.ID]; ok && o.State != Accepted {
			continue
		}
		byID[r.ID] = r
	}
	all := make([]Reservation, 0, len(byID))
	for _, r := range byID {
		all = append(all, r)
	}
	slices.SortFunc(all, order)
	var won []Reservation
	for _, r := range all {
		if r.State == Accepted {
			if w, ok := conflict(won, r); ok {
				r.State, r.Rule = Refused, RuleOverlap
				r.Reason = fmt.Sprintf("GPU %s is held by %s, accepted before it (order %d, this one %d)", w.unit, w.by.ID, w.by.Seq, r.Seq)
				lost = append(lost, r)
			} else {
				won = append(won, r)
			}
		}
		kept = append(kept, r)
	}
	return kept, lost
}

type winner struct {
	by   Reservation
	unit string
}

// conflict finds the first of won sharing a unit and a moment with r.
func conflict(won []Reservation, r Reservation) (winner, bool) {
	for _, w := range won {
		if !w.From.Before(r.Until) || !r.From.Before(w.Until) {
			continue
		}
		for _, u := range r.Units {
			if slices.Contains(w.Units, u) {
				return winner{w, u}, true
			}
		}
	}
	return winner{}, false
}

// pruneLocked drops from the book the reservations over for a week, and
// the oldest past MaxKept.
func (b *Book) pruneLocked(now time.Time) {
	for id, r := range b.rs {
		if r.Until.Before(now.Add(-keepEnded)) {
			b.dropLocked(id)
		}
	}
	if len(b.rs) <= MaxKept {
		return
	}
	for _, r := range slices.Clone(b.sortedLocked()) {
		if len(b.rs) <= MaxKept {
			break
		}
		if !r.Active(now) {
			b.dropLocked(r.ID)
		}
	}
}
