package alerting

import (
	"context"
	"encoding/json"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// relayWindow is how far back, beside the alerts it saw firing, the relay
// reads a machine's alerts at each look: an alert that fired earlier and
// reaches this replica only now (after a long network split) is not
// posted.
const relayWindow = 24 * time.Hour

// relay is what the relay has seen of the alerts of the machines without
// the URL: per machine, whether each alert was cleared. A machine not seen
// yet is taken as it was at since (what fired or cleared before was there
// when this machine started, or before the URL was set: not posted);
// everything is forgotten when this machine stops holding the URL, and at
// a restart.
type relay struct {
	seen  map[string]map[string]seenAlert // origin -> alert ID -> what was seen; nil: not holding
	since time.Time
}

type seenAlert struct {
	cleared, muted bool
	severity       string
	fired          time.Time
}

// relayAlerts posts, when this machine is the relay, each firing and each
// clearing of the alerts of the pool's machines that do not hold the
// webhook URL (a member's or viewer's, or one that missed it), once,
// under their names. recs are the published states. Every owner's or
// admin's machine holding the URL keeps track; the one that posts is, of
// those this machine sees online, the one with the lowest device ID. Each
// decides from its own view: during a network split two may post the
// same alert for a while, and an alert that changes just as the relay
// goes away may be posted by none.
func (a *Alerting) relayAlerts(ctx context.Context, recs []store.Record) {
	wh := a.m.WebhookSetting()
	if !a.mayHold() || wh.URL == "" {
		a.relay.seen = nil
		return
	}
	if a.relay.seen == nil {
		a.relay.seen = map[string]map[string]seenAlert{}
		a.relay.since = a.opened
		if wh.At.After(a.opened) {
			a.relay.since = wh.At
		}
	}
	st, ok := a.pool.Snapshot()
	if !ok {
		return // no pool: no other machine
	}
	states := publishedStates(recs)
	relay := a.isRelay(st.Members, states)
	seen := map[string]map[string]seenAlert{}
	for _, m := range st.Members {
		if m.Removed || m.ID == a.cfg.Self.String() {
			continue
		}
		if states[m.ID] {
			seen[m.ID] = nil // it posts its own, until it drops the URL
			continue
		}
		prev, known := a.relay.seen[m.ID] // not known: taken as it was at since
		// One that just dropped the URL posted what it has: taken as it is.
		post := relay && !(known && prev == nil)
		seen[m.ID] = a.relayOf(ctx, m, prev, known, post)
	}
	a.relay.seen = seen
}

// publishedStates says, per machine, whether it published that it holds
// the webhook URL. A member's machine that claims to (one of an older
// version does hold it) posts its own alerts: the claim silences no one
// else's, and picks no relay (isRelay counts owners' and admins' only).
func publishedStates(recs []store.Record) map[string]bool {
	out := map[string]bool{}
	for _, r := range recs {
		var st alerts.State
		if json.Unmarshal(r.Data, &st) == nil {
			out[r.Origin] = st.Webhook
		}
	}
	return out
}

// isRelay says whether this machine has the lowest device ID of the
// owners' and admins' machines it sees online holding the URL.
func (a *Alerting) isRelay(members []pool.MemberState, holds map[string]bool) bool {
	self := a.cfg.Self.String()
	for _, m := range members {
		if m.Removed || m.ID >= self || !holds[m.ID] || !app.HoldsWebhook(string(m.Role), true) {
			continue
		}
		if a.cfg.Live != nil && a.cfg.Live.Online(m.ID) {
			return false
		}
	}
	return true
}

// relayOf reads the alerts of the machine m, posts (when post) what
// changed since prev (not known: since the relay's since), and returns
// what it saw.
func (a *Alerting) relayOf(ctx context.Context, m pool.MemberState, prev map[string]seenAlert, known, post bool) map[string]seenAlert {
	from := time.Now().Add(-relayWindow)
	for _, s := range prev {
		if !s.cleared && s.fired.Before(from) {
			from = s.fired // its clearing is still to come
		}
	}
	recs, err := a.db.Range(ctx, m.ID, app.KindAlert, from, time.Now().Add(24*time.Hour))
	if err != nil {
		a.log.Debug("read the alerts to relay", "peer", m.ID, "err", err)
		return prev
	}
	name := m.Name
	if d, err := peer.ParseID(m.ID); name == "" && err == nil {
		name = d.Short()
	}
	out := map[string]seenAlert{}
	for _, r := range recs {
		var al alerts.Alert
		if json.Unmarshal(r.Data, &al) != nil || al.ID == "" || al.Node != m.ID || al.Rule == alerts.RuleOffline {
			continue // one about another machine: the relay observes it itself
		}
		now := seenAlert{cleared: !al.Active(), muted: al.Muted, severity: al.Severity, fired: al.FiredAt}
		was, ok := prev[al.ID]
		if !known {
			was, ok = asAt(al, a.relay.since)
		}
		out[al.ID] = now
		// As its machine would post it: a change unless muted, an
		// unmuting of a firing one too, a change of its severity once;
		// nothing after the clearing.
		regraded := ok && !now.cleared && was.severity != now.severity
		changed := !ok || was.cleared != now.cleared || (was.muted && !now.muted) || regraded
		if !post || !changed || now.muted || (ok && was.cleared) {
			continue
		}
		al.Was = ""
		if regraded && !was.muted {
			al.Was = was.severity // as seen here: a change between two looks is one
		}
		if !ok && now.cleared { // it fired and cleared between two looks
			firing := al
			firing.ClearedAt = nil
			a.sendAs(name, firing)
		}
		a.sendAs(name, al)
	}
	return out
}

// asAt is alert al as it was at t: not yet fired (false), firing, or
// cleared.
func asAt(al alerts.Alert, t time.Time) (seenAlert, bool) {
	if !al.FiredAt.Before(t) {
		return seenAlert{}, false
	}
	return seenAlert{cleared: al.ClearedAt != nil && al.ClearedAt.Before(t), muted: al.Muted, severity: al.Severity, fired: al.FiredAt}, true
}
