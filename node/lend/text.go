package lend

import (
	"fmt"
	"strings"
	"time"
)

// Text says s to people at now, times on now's wall clock: "lent (owner
// away 23 min)", "owner present: guests pause at 14:32", "owner's:
// outside the lend hours (mon-fri 19:00-08:00)".
func (s Status) Text(now time.Time) string {
	switch s.Phase {
	case Lent:
		if s.Mode == Idle && !s.OwnerSeen.IsZero() {
			return fmt.Sprintf("lent (owner away %s)", minutes(now.Sub(s.OwnerSeen)))
		}
		if s.Hours != "" {
			return "lent (" + s.Hours + ")"
		}
		return "lent"
	case Warned:
		head, sign := s.cause()
		return fmt.Sprintf("%s: guests %s at %s%s", head, yieldVerb(s.Yield), s.Deadline.In(now.Location()).Format("15:04"), sign)
	case Yielded:
		done := "paused"
		if s.Yield == Stop {
			done = "stopped"
		}
		head, sign := s.cause()
		return fmt.Sprintf("%s: guests %s since %s%s", head, done, s.Since.In(now.Location()).Format("15:04"), sign)
	}
	if strings.HasPrefix(s.Why, PresentPrefix) {
		return s.Why
	}
	return "owner's: " + s.Why
}

// cause splits Why into its head and, for an owner present, the sign
// that saw them: "owner present", " (I'm using it)".
func (s Status) cause() (head, sign string) {
	if rest, ok := strings.CutPrefix(s.Why, PresentPrefix); ok {
		return strings.TrimSuffix(PresentPrefix, ": "), " (" + rest + ")"
	}
	return s.Why, ""
}

// minutes writes d as "23 min", "2 h 5 min" or "under a minute".
func minutes(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m < 1:
		return "under a minute"
	case m < 60:
		return fmt.Sprintf("%d min", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}
