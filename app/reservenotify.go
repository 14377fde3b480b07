package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/labpool/labpool/node/reserve"
)

// ReservationNotices tells this member of each reservation of theirs that
// its machine refused after accepting it (it lost to an earlier one, see
// reserve.Settle) or that someone else cancelled: one notification per
// reservation, while it is still to end. It is not safe for concurrent
// use.
type ReservationNotices struct {
	told map[string]bool // reservation (node/ID) already told of
}

// Update returns the notifications rs calls for, for member self at now.
func (t *ReservationNotices) Update(rs []Reservation, self string, now time.Time) []Notification {
	if t.told == nil {
		t.told = map[string]bool{}
	}
	var out []Notification
	for _, r := range rs {
		key := r.Node + "/" + r.ID
		if r.Member != self || r.Problem != "" || t.told[key] || !r.Until.After(now) {
			continue
		}
		switch {
		case r.State == reserve.Refused:
			out = append(out, Notification{Critical: true,
				Summary: fmt.Sprintf("Reservation %s on %s refused", r.ID, cmpOr(r.NodeName, shortID(r.Node))),
				Body:    fmt.Sprintf("GPUs %v from %s: %s (rule: %s)", r.GPUs, r.From.Local().Format("Mon 2 Jan 15:04"), r.Reason, r.Rule)})
		case r.State == reserve.Cancelled && r.Reason != "cancelled by "+self:
			out = append(out, Notification{
				Summary: fmt.Sprintf("Reservation %s on %s cancelled", r.ID, cmpOr(r.NodeName, shortID(r.Node))),
				Body:    fmt.Sprintf("GPUs %v from %s: %s", r.GPUs, r.From.Local().Format("Mon 2 Jan 15:04"), r.Reason)})
		default:
			continue
		}
		t.told[key] = true
	}
	return out
}

// ReservationNoticeSource is the daemon as the notices read it (a web.Client).
type ReservationNoticeSource interface {
	Self(ctx context.Context) (Self, error)
	Reservations(ctx context.Context) ([]Reservation, error)
}

// reservationPoll is how often the notices read the reservations.
const reservationPoll = 30 * time.Second

// RunReservationNotifications notifies the desktop of this member's
// reservations that were refused or cancelled by someone else, until ctx
// ends; those still to end when it starts are told too (a loss settled
// while this machine slept is news).
func RunReservationNotifications(ctx context.Context, src ReservationNoticeSource, n Notifier, log *slog.Logger) {
	if n == nil {
		return
	}
	var t ReservationNotices
	for {
		if self, err := src.Self(ctx); err == nil {
			if rs, err := src.Reservations(ctx); err == nil {
				for _, no := range t.Update(rs, self.ID, time.Now()) {
					if err := n.Notify(ctx, no); err != nil {
						log.Debug("desktop notification", "reservation", no.Summary, "err", err)
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(reservationPoll):
		}
	}
}
