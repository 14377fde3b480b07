package cli

import (
	"fmt"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// idleFlags sets u's idle reclaim fields from `labpool policy
// --idle-reclaim D --idle-below P`.
func idleFlags(setReclaim bool, reclaim string, setBelow bool, below float64, u *app.PolicyUpdate) error {
	if setReclaim {
		d, err := alertSpan(reclaim)
		if err != nil {
			return usageError{fmt.Errorf("--idle-reclaim: %w", err)}
		}
		secs := int(d / time.Second)
		u.IdleReclaimSeconds = &secs
	}
	if setBelow {
		u.IdleBelowPercent = &below
	}
	return nil
}

// idleReclaimText says what the idle reclaim policy does.
func idleReclaimText(p app.Policy) string {
	if p.IdleReclaimSeconds <= 0 {
		return "off"
	}
	return fmt.Sprintf("stop a job whose GPUs stay under %g%% for %s (warned first)", p.IdleBelowPercent,
		time.Duration(p.IdleReclaimSeconds)*time.Second)
}

// reclaimNote is the countdown of a job the idle reclaim policy will stop:
// " (idle: stopped in 12m)", or "" for none.
func reclaimNote(j jobs.Job, now time.Time) string {
	if j.ReclaimAt == nil || j.State != jobs.Running {
		return ""
	}
	left := max(j.ReclaimAt.Sub(now), 0).Round(time.Second)
	return fmt.Sprintf(" (GPUs idle: stopped in %s unless busy)", left)
}
