package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/labpool/labpool/node/alerts"
)

// Notification is one desktop notification.
type Notification struct {
	Summary, Body string
	Critical      bool
}

// Notifier shows desktop notifications.
type Notifier interface {
	Notify(ctx context.Context, n Notification) error
}

// GDBusNotifier sends freedesktop notifications
// (org.freedesktop.Notifications.Notify) with `gdbus call` on the session
// bus.
type GDBusNotifier struct {
	// Run runs a command; nil runs it with os/exec.
	Run func(ctx context.Context, name string, args ...string) error
}

// SessionBus says whether a desktop session bus and gdbus are here: where
// they are not (a server, a test), notifications are skipped silently.
func SessionBus() bool {
	if _, err := exec.LookPath("gdbus"); err != nil {
		return false
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return true
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, "bus"))
	return err == nil
}

// Notify implements Notifier.
func (g GDBusNotifier) Notify(ctx context.Context, n Notification) error {
	urgency := 1 // normal
	if n.Critical {
		urgency = 2
	}
	args := []string{"call", "--session",
		"--dest", "org.freedesktop.Notifications",
		"--object-path", "/org/freedesktop/Notifications",
		"--method", "org.freedesktop.Notifications.Notify", "--", // the -1 below is no option
		gvariantString("labpool"), "0", gvariantString("labpool"),
		gvariantString(n.Summary), gvariantString(bodyMarkup.Replace(n.Body)),
		"@as []", fmt.Sprintf("{'urgency': <byte %d>}", urgency), "-1"}
	run := g.Run
	if run == nil {
		run = func(ctx context.Context, name string, args ...string) error {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
			}
			return nil
		}
	}
	return run(ctx, "gdbus", args...)
}

// bodyMarkup escapes the markup a notification server may read in a body
// (peer-supplied names are text).
var bodyMarkup = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// gvariantString quotes s as a GVariant text string, so that gdbus reads
// any text (a machine's name, a message) as a string, never as syntax.
func gvariantString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// AlertNotifier turns the alerts of the pool into notifications: one per
// incident that starts after it first saw the list (not those already there
// when the window opened), unless muted, and one per change of an
// incident's severity (a rise to critical, a fall back to warning). An
// incident is one alert of this version's evaluators; alerts that tell one
// story arrive apart from older agents or from several observers (three
// rules on one GPU, five GPUs of one idle job, one machine seen offline by
// each GPU machine), and are folded here too: one notification while any
// of them is active.
type AlertNotifier struct {
	n      Notifier
	log    *slog.Logger
	seen   map[string]string // alert IDs already notified or present at start -> their severity as last seen
	open   map[string]bool   // incidents notified (or present at start) and still active
	primed bool
}

// NewAlertNotifier returns a notifier sending through n.
func NewAlertNotifier(n Notifier, log *slog.Logger) *AlertNotifier {
	return &AlertNotifier{n: n, log: log, seen: map[string]string{}, open: map[string]bool{}}
}

// Update takes the current list of alerts; names maps device IDs to
// machine names. The first call only records what is there.
func (a *AlertNotifier) Update(ctx context.Context, as []Alert, names map[string]string) {
	active := map[string]bool{}
	for _, al := range as {
		if al.Active() {
			active[incidentOf(al)] = true
		}
	}
	for k := range a.open {
		if !active[k] {
			delete(a.open, k) // over: the next one is news
		}
	}
	for _, al := range as {
		if sev, ok := a.seen[al.ID]; ok {
			a.seen[al.ID] = al.Severity
			if sev != al.Severity && al.Active() && !al.Muted && a.primed && a.open[incidentOf(al)] {
				a.notify(ctx, al, changed(notification(al, names), sev, al.Severity))
			}
			continue
		}
		a.seen[al.ID] = al.Severity
		key := incidentOf(al)
		if !al.Active() || al.Muted || a.open[key] {
			continue
		}
		a.open[key] = true
		if !a.primed {
			continue
		}
		a.notify(ctx, al, notification(al, names))
	}
	a.primed = true
}

func (a *AlertNotifier) notify(ctx context.Context, al Alert, n Notification) {
	if err := a.n.Notify(ctx, n); err != nil {
		a.log.Debug("desktop notification", "alert", al.ID, "err", err)
	}
}

// changed is n told as an incident's change of severity, from was to now.
func changed(n Notification, was, now string) Notification {
	verb := "lowered"
	if now == alerts.Critical {
		verb = "raised"
	}
	n.Summary += fmt.Sprintf(": %s to %s from %s", verb, now, was)
	return n
}

// incidentOf is the incident an alert tells of: an idle job, a GPU, or a
// machine offline (whoever observed it); otherwise the alert itself.
func incidentOf(a Alert) string {
	switch {
	case a.Job != "":
		return a.Node + "/job/" + a.Job
	case a.GPU != nil:
		return fmt.Sprintf("%s/gpu%d", a.Node, *a.GPU)
	case a.Rule == alerts.RuleOffline:
		return a.Node + "/" + a.Rule
	}
	return a.ID
}

func notification(a Alert, names map[string]string) Notification {
	name := names[a.Node]
	if name == "" {
		name = shortID(a.Node)
	}
	summary := fmt.Sprintf("%s on %s", a.Rule, name)
	if a.Observer != "" {
		summary += fmt.Sprintf(" (seen from %s)", cmpOr(names[a.Observer], shortID(a.Observer)))
	}
	return Notification{Summary: summary, Body: a.Message, Critical: a.Severity == alerts.Critical}
}

// AlertSource is the daemon as the notifier reads it (a web.Client).
type AlertSource interface {
	Alerts(ctx context.Context, seconds int) ([]Alert, error)
	Nodes(ctx context.Context) ([]Node, error)
	Events(ctx context.Context, fn func(name string, data json.RawMessage)) error
}

// RunAlertNotifications notifies the desktop of each alert that fires
// while ctx lasts, following the daemon's events (reconnecting when they
// break); without a session bus it returns at once.
func RunAlertNotifications(ctx context.Context, src AlertSource, n Notifier, log *slog.Logger) {
	if n == nil {
		return
	}
	an := NewAlertNotifier(n, log)
	var ln *LendNotifier // the user's jobs on lent machines, where the source says who the user is
	if me, ok := src.(interface {
		Self(context.Context) (Self, error)
	}); ok {
		if self, err := me.Self(ctx); err == nil {
			ln = NewLendNotifier(n, self.ID, log)
		}
	}
	names := map[string]string{}
	for ctx.Err() == nil && !an.primed {
		if as, err := src.Alerts(ctx, 0); err == nil {
			an.Update(ctx, as, names)
			log.Info("desktop notifications: on, for each alert that fires from now", "alerts_already_there", len(as))
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
	for ctx.Err() == nil {
		err := src.Events(ctx, func(name string, data json.RawMessage) {
			if name == EventJobs && ln != nil {
				var js []Job
				if json.Unmarshal(data, &js) == nil {
					ln.Update(ctx, js)
				}
				return
			}
			if name != EventAlerts {
				return
			}
			var as []Alert
			if json.Unmarshal(data, &as) != nil {
				return
			}
			if missingName(as, names) {
				if nodes, err := src.Nodes(ctx); err == nil {
					for _, nd := range nodes {
						names[nd.ID] = nd.Name
					}
				}
			}
			an.Update(ctx, as, names)
		})
		if ctx.Err() != nil {
			return
		}
		log.Debug("alert notifications: events ended; reconnecting", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

func missingName(as []Alert, names map[string]string) bool {
	for _, a := range as {
		if names[a.Node] == "" {
			return true
		}
	}
	return false
}
