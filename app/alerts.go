package app

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/labpool/labpool/node/alerts"
)

// Record kinds of alerts in the replica. Every machine is the only writer
// of its own: the alerts it evaluated (about itself, or "machine offline"
// about another), and its effective rules.
const (
	KindAlert      = schema.KindAlert      // key: alert ID; Alert; time: when it fired
	KindAlertRules = schema.KindAlertRules // key: ""; AlertState
)

// EventAlerts carries []Alert (those of the last week and every active
// one) whenever an alert record arrives or changes (coalesced).
const EventAlerts = "alerts"

// Alert is one firing of a rule on one machine, and its clearing.
type Alert = alerts.Alert

// AlertRule is one alert rule (see alerts.Rule).
type AlertRule alerts.Rule

// AlertRuleUpdate changes the fields it sets of a rule (see
// alerts.RuleUpdate); a new rule needs metric and op.
type AlertRuleUpdate alerts.RuleUpdate

// AlertRuleRequest is PUT /api/v1/alerts/rules/{id}: the rule's ID from the
// path, the fields to change in the body.
type AlertRuleRequest struct {
	ID string `json:"-"`
	AlertRuleUpdate
}

// AlertMute silences a rule on one machine until a time.
type AlertMute = alerts.Mute

// AlertState is what a machine publishes of its alerting (see alerts.State).
type AlertState = alerts.State

// MuteRequest mutes the rule of alert ID (on the machine that evaluates
// it), or Rule on Node (GPU GPU, or all), for Seconds; Seconds 0 ends the
// mute.
type MuteRequest struct {
	ID      string `json:"id,omitempty"`
	Node    string `json:"node,omitempty"` // name or ID
	Rule    string `json:"rule,omitempty"`
	GPU     *int   `json:"gpu,omitempty"`
	Seconds int    `json:"seconds"`
}

// WebhookRequest sets the pool's alert webhook: the machines of owners and
// admins hold it and POST the alerts there as JSON when they fire and
// clear, their own and, from one of them, the other machines'. An empty
// URL removes it.
type WebhookRequest struct {
	URL string `json:"url"`
}

// AlertWebhook is the webhook as this machine has it: Set says whether one
// is; URL is answered to owners' and admins' devices only (Service.AlertWebhook).
type AlertWebhook struct {
	URL string `json:"url"`
	Set bool   `json:"set"`
}

// Applied says which machines took a change sent to each of them.
type Applied struct {
	Applied []string      `json:"applied"` // names of the machines that took it
	Failed  []NodeFailure `json:"failed"`
}

// NodeFailure is one machine a change did not reach, and why.
type NodeFailure struct {
	Node  string `json:"node"`
	Name  string `json:"name"`
	Error string `json:"error"`
}

// AlertRuleChange is the rule as set, and where it took.
type AlertRuleChange struct {
	Rule AlertRule `json:"rule"`
	Applied
}

// SettingAlertWebhook is the local setting holding the pool's webhook URL
// as this machine last received it (never replicated: it is a secret of
// the lab's chat).
const SettingAlertWebhook = schema.SettingAlertWebhook

// alertWindow is how far back Alerts reads by default.
const alertWindow = 7 * 24 * time.Hour

// Alerts returns the alerts of the pool that fired in the last seconds
// (a week when 0), and every one still active, newest first. An alert is
// a machine's only when that machine wrote it: one a machine wrote about
// another is left out, but for a "machine offline" alert this machine
// recorded (every member records its own), marked with it as Observer.
// Only the machines of the pool now are listed (nodeIDs): a machine
// removed from its pool lists its own alerts about itself, none of the
// old pool's, whose last records may still say they fire.
func (r *Reader) Alerts(ctx context.Context, seconds int) ([]Alert, error) {
	if seconds < 0 {
		return nil, fmt.Errorf("%w: since must not be negative", ErrInvalid)
	}
	window := alertWindow
	if seconds > 0 {
		window = time.Duration(seconds) * time.Second
	}
	from := r.now().Add(-window)
	origins, names, err := r.nodeIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := []Alert{}
	for _, o := range origins {
		recs, err := r.db.Range(ctx, o, KindAlert, time.Time{}, r.now().Add(24*time.Hour))
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			var a Alert
			if json.Unmarshal(rec.Data, &a) != nil || a.ID == "" {
				continue
			}
			if _, inPool := names[a.Node]; !inPool || !shownAs(a, o, r.self.ID) {
				continue
			}
			a.Observer = ""
			if a.Node != o {
				a.Observer = o
			}
			if a.Active() || !a.FiredAt.Before(from) {
				out = append(out, a)
			}
		}
	}
	sort.SliceStable(out, func(i, k int) bool {
		if !out[i].FiredAt.Equal(out[k].FiredAt) {
			return out[i].FiredAt.After(out[k].FiredAt)
		}
		return out[i].ID < out[k].ID
	})
	return out, nil
}

// shownAs says whether alert a, recorded by origin, is listed: a
// machine's own alert, or a machine offline as self sees it.
func shownAs(a Alert, origin, self string) bool {
	if a.Rule == alerts.RuleOffline {
		return origin == self && a.Node != self
	}
	return a.Node == origin
}

// AlertRules returns the rules a machine (this one when node is empty)
// evaluates, as it last published them; the defaults when it published
// none.
func (r *Reader) AlertRules(ctx context.Context, node string) ([]AlertRule, error) {
	id := r.self.ID
	if node != "" {
		n, err := r.NodeByRef(ctx, node)
		if err != nil {
			return nil, err
		}
		id = n.ID
	}
	st, err := r.alertState(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]AlertRule, len(st.Rules))
	for i, rule := range st.Rules {
		out[i] = AlertRule(rule)
	}
	return out, nil
}

// alertState reads what node published of its alerting.
func (r *Reader) alertState(ctx context.Context, node string) (AlertState, error) {
	st := AlertState{Rules: alerts.DefaultRules(), Mutes: []AlertMute{}}
	rec, ok, err := r.db.Latest(ctx, node, KindAlertRules, "")
	if err != nil || !ok {
		return st, err
	}
	if err := json.Unmarshal(rec.Data, &st); err != nil || st.Rules == nil {
		return AlertState{Rules: alerts.DefaultRules(), Mutes: []AlertMute{}}, nil
	}
	return st, nil
}

// AlertWebhook returns the pool's webhook as this machine has it.
func (r *Reader) AlertWebhook(ctx context.Context) (AlertWebhook, error) {
	v, _, err := r.db.Setting(ctx, SettingAlertWebhook)
	return AlertWebhook{URL: v, Set: v != ""}, err
}

// mayConfigureAlerts refuses a device that is neither owner nor admin of
// its pool (outside a pool this machine configures itself).
func (s *Service) mayConfigureAlerts(ctx context.Context, what string) error {
	ps, err := s.Pool(ctx)
	if err != nil {
		return err
	}
	if ps.PoolID == "" || ps.SelfRole == "owner" || ps.SelfRole == "admin" {
		return nil
	}
	role := ps.SelfRole
	if role == "" {
		role = "not a member"
	}
	return fmt.Errorf("%w: owners and admins set %s (rule \"alerts: owners and admins only\"); this device is %s", ErrForbidden, what, role)
}

// SetAlertRule changes (or adds) a rule on every machine of the pool
// (owners and admins); each checks the caller's role again, keeps the rule
// in its local settings and publishes its effective rules. A machine that
// cannot be reached is listed in Failed.
func (s *Service) SetAlertRule(ctx context.Context, req AlertRuleRequest) (AlertRuleChange, error) {
	if err := s.mayConfigureAlerts(ctx, "alert rules"); err != nil {
		return AlertRuleChange{}, err
	}
	rules, err := s.AlertRules(ctx, "")
	if err != nil {
		return AlertRuleChange{}, err
	}
	base := make([]alerts.Rule, len(rules))
	for i, r := range rules {
		base[i] = alerts.Rule(r)
	}
	_, rule, err := alerts.Merge(base, req.ID, alerts.RuleUpdate(req.AlertRuleUpdate))
	if err != nil {
		return AlertRuleChange{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	applied, err := s.toEveryNode(ctx, func(ctx context.Context, c alerts.Client) error {
		_, err := c.SetRule(ctx, req.ID, alerts.RuleUpdate(req.AlertRuleUpdate))
		return err
	})
	return AlertRuleChange{Rule: AlertRule(rule), Applied: applied}, err
}

// SetAlertWebhook sets the pool's webhook (owners and admins) on the
// machines of owners and admins, the only ones that hold its URL (a
// relay among them posts the others' alerts): http or https only.
func (s *Service) SetAlertWebhook(ctx context.Context, req WebhookRequest) (Applied, error) {
	if err := s.mayConfigureAlerts(ctx, "the alert webhook"); err != nil {
		return Applied{}, err
	}
	if err := alerts.CheckWebhookURL(req.URL); err != nil {
		return Applied{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	ps, err := s.Pool(ctx)
	if err != nil {
		return Applied{}, err
	}
	// Every such machine holds it as set at the same time: one that misses
	// it fetches it later from an owner's or admin's machine holding a
	// newer one. A removal, which carries no secret, goes to every machine
	// (one of an older version may still hold a URL).
	keep := webhookHolders(ps)
	if req.URL == "" {
		keep = nil
	}
	w := alerts.WebhookSetting{URL: req.URL, At: time.Now().UTC()}
	return s.toNodes(ctx, keep, func(ctx context.Context, c alerts.Client) error { return c.SetWebhook(ctx, w) })
}

// MuteAlert mutes (or, with Seconds 0, unmutes) a rule on the machine that
// evaluates it; viewers cannot.
func (s *Service) MuteAlert(ctx context.Context, req MuteRequest) (AlertMute, error) {
	m := AlertMute{Rule: req.Rule, GPU: req.GPU}
	origin := ""
	if req.ID != "" {
		a, o, err := s.alertByID(ctx, req.ID)
		if err != nil {
			return AlertMute{}, err
		}
		m.Node, m.Rule, m.GPU, origin = a.Node, a.Rule, a.GPU, o
	} else {
		if req.Node == "" || req.Rule == "" {
			return AlertMute{}, fmt.Errorf("%w: mute an alert by its ID, or a rule on a machine (node and rule)", ErrInvalid)
		}
		n, err := s.NodeByRef(ctx, req.Node)
		if err != nil {
			return AlertMute{}, err
		}
		m.Node, origin = n.ID, n.ID
		if req.Rule == alerts.RuleOffline {
			origin = s.self.ID // observed here
		}
	}
	if req.Seconds < 0 || req.Seconds > 30*24*3600 {
		return AlertMute{}, fmt.Errorf("%w: mute for 0 (unmute) to 30 days", ErrInvalid)
	}
	if req.Seconds > 0 {
		m.Until = s.now().Add(time.Duration(req.Seconds) * time.Second).UTC()
	}
	return alerts.Client{Conn: s.Peer(origin)}.Mute(ctx, m)
}

// alertByID finds an alert of the replica, and the machine that recorded it.
func (r *Reader) alertByID(ctx context.Context, id string) (Alert, string, error) {
	origins, err := r.db.Origins(ctx)
	if err != nil {
		return Alert{}, "", err
	}
	for _, o := range origins {
		rec, ok, err := r.db.Latest(ctx, o, KindAlert, id)
		if err != nil {
			return Alert{}, "", err
		}
		var a Alert
		if ok && json.Unmarshal(rec.Data, &a) == nil && shownAs(a, o, r.self.ID) {
			return a, o, nil
		}
	}
	return Alert{}, "", fmt.Errorf("%w: no alert %q", ErrNotFound, id)
}

// toEveryNode sends one change to every machine of the pool, side by side,
// each within 10 s. It fails when no machine took it, with the first
// machine's error (a refusal names its rule).
func (s *Service) toEveryNode(ctx context.Context, call func(context.Context, alerts.Client) error) (Applied, error) {
	return s.toNodes(ctx, nil, call)
}

// toNodes is toEveryNode for the machines keep keeps (nil: all).
func (s *Service) toNodes(ctx context.Context, keep func(id string) bool, call func(context.Context, alerts.Client) error) (Applied, error) {
	ids, names, err := s.nodeIDs(ctx)
	if err != nil {
		return Applied{}, err
	}
	if keep != nil {
		ids = slices.DeleteFunc(ids, func(id string) bool { return !keep(id) })
	}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			errs[i] = call(cctx, alerts.Client{Conn: s.Peer(id)})
		})
	}
	wg.Wait()
	out := Applied{Applied: []string{}, Failed: []NodeFailure{}}
	for i, id := range ids {
		name := cmpOr(names[id], shortID(id))
		if errs[i] == nil {
			out.Applied = append(out.Applied, name)
			continue
		}
		out.Failed = append(out.Failed, NodeFailure{Node: id, Name: name, Error: errs[i].Error()})
	}
	if len(out.Applied) == 0 && len(errs) > 0 {
		return out, errs[0]
	}
	slices.Sort(out.Applied)
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
