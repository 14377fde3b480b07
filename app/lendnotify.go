package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// LendNotifier tells this machine's user, on their desktop, when the
// owner of a machine that lent them GPUs takes it back: each of their
// jobs there once warned (it pauses or stops at a time) and once paused.
// The job's record says the same to every reader (ps, the jobs table).
type LendNotifier struct {
	n    Notifier
	log  *slog.Logger
	self string // this machine's user's device ID: their jobs

	seen   map[string]string // job ID -> the lend note last seen
	primed bool              // the first list was read: only news is told
}

// NewLendNotifier tells self's user through n.
func NewLendNotifier(n Notifier, self string, log *slog.Logger) *LendNotifier {
	return &LendNotifier{n: n, log: log, self: self, seen: map[string]string{}}
}

// Update reads the jobs as the daemon lists them and tells what changed
// of self's running jobs' lend notes since the last list; the first list
// tells nothing.
func (l *LendNotifier) Update(ctx context.Context, js []Job) {
	now := map[string]string{}
	for _, j := range js {
		if j.Owner != l.self || j.Lend == nil || j.State != jobs.Running {
			continue
		}
		key := fmt.Sprintf("%v %s", j.Lend.Paused, j.Lend.At.Format(time.RFC3339))
		now[j.ID] = key
		if l.primed && l.seen[j.ID] != key {
			if err := l.n.Notify(ctx, lendNotification(j)); err != nil {
				l.log.Debug("desktop notification of a lend", "job", j.ID, "err", err)
			}
		}
	}
	l.seen, l.primed = now, true
}

// lendNotification is what the desktop shows: "train on ws-a100: its
// owner is back", "pauses at 14:32 (owner present: I'm using it)".
func lendNotification(j Job) Notification {
	n := j.Lend
	at := n.At.Local().Format("15:04")
	body := fmt.Sprintf("pauses at %s (%s)", at, n.Why)
	switch {
	case n.Paused:
		body = fmt.Sprintf("paused since %s (%s)", at, n.Why)
	case n.Yield == "stop":
		body = fmt.Sprintf("stops at %s (%s)", at, n.Why)
	}
	return Notification{Summary: fmt.Sprintf("%s on %s: the machine's owner takes it back", j.Name, j.NodeName), Body: body}
}
