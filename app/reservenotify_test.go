package app

import (
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/reserve"
)

// TestReservationNotices: the member whose reservation lost is told once;
// other members, reservations over, their own cancels and accepted ones
// are not.
func TestReservationNotices(t *testing.T) {
	from := t0.Add(time.Hour)
	mk := func(id, member string, st reserve.State, reason string, until time.Time) Reservation {
		return Reservation{Node: mikeID, NodeName: "mike", Reservation: reserve.Reservation{ID: id, Member: member, State: st,
			Rule: reserve.RuleOverlap, Reason: reason, From: from, Until: until, GPUs: []int{0}}}
	}
	rs := []Reservation{
		mk("rsv-lost", selfID, reserve.Refused, "GPU GPU-0 is held by rsv-b, accepted before it", from.Add(time.Hour)),
		mk("rsv-other", alphaID, reserve.Refused, "x", from.Add(time.Hour)),
		mk("rsv-over", selfID, reserve.Refused, "x", t0.Add(-time.Minute)),
		mk("rsv-mine", selfID, reserve.Cancelled, "cancelled by "+selfID, from.Add(time.Hour)),
		mk("rsv-admin", selfID, reserve.Cancelled, "cancelled by "+alphaID, from.Add(time.Hour)),
		mk("rsv-ok", selfID, reserve.Accepted, "", from.Add(time.Hour)),
	}
	var n ReservationNotices
	got := n.Update(rs, selfID, t0)
	if len(got) != 2 || !strings.Contains(got[0].Summary, "rsv-lost") || !strings.Contains(got[0].Body, "rsv-b") ||
		!strings.Contains(got[1].Summary, "rsv-admin") {
		t.Fatalf("notifications %+v; want rsv-lost (naming the winner) and rsv-admin", got)
	}
	if again := n.Update(rs, selfID, t0); len(again) != 0 {
		t.Errorf("told again: %+v", again)
	}
}
