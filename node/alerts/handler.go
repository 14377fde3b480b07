package alerts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/peerapi"
)

// Roles a caller holds in the pool (sync/pool's, as strings).
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// RuleWebhookHolders is the rule a refusal to give or keep the webhook URL
// names: it is a secret of the lab's chat.
const RuleWebhookHolders = "alerts: the webhook URL goes to owners' and admins' devices only"

// Caller is who asks: the device proven by the transport, its role in the
// pool, and whether it is this machine's own user.
type Caller struct {
	ID    string
	Role  string // "" = not a member
	Local bool
}

// State is what a machine publishes of its alerting: its effective rules,
// its mutes, and whether a webhook is set (never its URL, a secret of the
// lab's chat).
type State struct {
	Rules []Rule `json:"rules"`
	// RulesAt is when an owner or admin last changed the rules (zero: the
	// defaults): a machine that missed a change adopts the newest rules an
	// owner's or admin's machine publishes (see Machine.Adopt).
	RulesAt time.Time `json:"rules_at"`
	Mutes   []Mute    `json:"mutes"`
	// Pinned are the rules this machine's owner pinned: no one else mutes
	// them here.
	Pinned  []string `json:"pinned,omitempty"`
	Webhook bool     `json:"webhook"`
	// WebhookAt is when an owner or admin last set or removed the webhook
	// (zero: never): a machine that missed it fetches the webhook from a
	// machine of an owner or admin that has a newer one (see
	// Machine.AdoptWebhook).
	WebhookAt time.Time `json:"webhook_at,omitzero"`
}

// WebhookSetting is the pool's webhook as a machine holds it, and when an
// owner or admin set it; an empty URL means none.
type WebhookSetting struct {
	URL string    `json:"url"`
	At  time.Time `json:"at,omitzero"`
}

// Settings keeps this machine's alerting in its local settings and
// publishes its State to the pool.
type Settings interface {
	SaveRules(rules []Rule, at time.Time) error
	SaveMutes([]Mute) error
	SavePins([]string) error
	SaveWebhook(WebhookSetting) error
	Publish(State) error
}

// Machine is this machine's alerting as the pool configures it: the
// evaluator's rules and mutes and the webhook, kept by Settings.
type Machine struct {
	Eval     *Evaluator
	Webhook  *Webhook
	Settings Settings
	// Member says whether a device is another member of the pool: the
	// offline alert of a member is the one mute this machine takes about
	// another machine (nil: none).
	Member func(id string) bool
	// MayHold says whether this machine's own device may hold the pool's
	// webhook URL: an owner's or admin's, or a machine in no pool (nil:
	// it may). A machine that may not takes no URL and drops one it held
	// (see DropWebhook); its alerts are posted by a relay.
	MayHold   func() bool
	mu        sync.Mutex // serializes changes (read, merge, save, apply); guards rulesAt, webhookAt and pinned
	rulesAt   time.Time  // when the rules were last changed (State.RulesAt)
	webhookAt time.Time  // when the webhook was last set (State.WebhookAt)
	pinned    []string   // the rules this machine's owner pinned (State.Pinned)
}

// State returns what this machine publishes.
func (m *Machine) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stateLocked()
}

// RulesAt is when the rules were last changed (zero: the defaults).
func (m *Machine) RulesAt() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rulesAt
}

// Restored sets the rules read from the local settings, changed at at.
func (m *Machine) Restored(rules []Rule, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.Eval.SetRules(rules); err != nil {
		return err
	}
	m.rulesAt = at
	return nil
}

// Adopt takes rules an owner's or admin's machine published, changed at
// at, when they are newer than this machine's (it was offline when they
// were set); it says whether it did. The caller checks the publisher's role.
func (m *Machine) Adopt(rules []Rule, at time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !at.After(m.rulesAt) {
		return false, nil
	}
	for _, r := range rules {
		if err := r.Check(); err != nil {
			return false, err
		}
	}
	if err := m.Settings.SaveRules(rules, at); err != nil {
		return false, err
	}
	if err := m.Eval.SetRules(rules); err != nil {
		return false, err
	}
	m.rulesAt = at
	return true, m.Settings.Publish(m.stateLocked())
}

// stateLocked is State with m.mu held.
func (m *Machine) stateLocked() State {
	return State{Rules: m.Eval.Rules(), RulesAt: m.rulesAt, Mutes: m.Eval.Mutes(time.Now()),
		Pinned: slices.Clone(m.pinned), Webhook: m.Webhook.URL() != "", WebhookAt: m.webhookAt}
}

// WebhookSetting returns the webhook this machine posts to, and when it was set.
func (m *Machine) WebhookSetting() WebhookSetting {
	m.mu.Lock()
	defer m.mu.Unlock()
	return WebhookSetting{URL: m.Webhook.URL(), At: m.webhookAt}
}

// RestoredWebhook sets the webhook read from the local settings.
func (m *Machine) RestoredWebhook(w WebhookSetting) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.Webhook.SetURL(w.URL); err != nil {
		return err
	}
	m.webhookAt = w.At
	return nil
}

// AdoptWebhook takes the webhook an owner's or admin's machine holds when
// it was set after this machine's (it was away, or joined later); it says
// whether it did. The caller checks the holder's role; a machine that may
// not hold the URL refuses it.
func (m *Machine) AdoptWebhook(w WebhookSetting) (bool, error) {
	if err := m.holds(w); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !w.At.After(m.webhookAt) {
		return false, nil
	}
	if err := m.setWebhookLocked(w); err != nil {
		return false, err
	}
	return true, nil
}

// DropWebhook removes the URL this machine holds when its device may not
// hold one (see MayHold), with no time of setting, so that a promotion
// fetches the pool's again; it says whether it dropped one.
func (m *Machine) DropWebhook() (bool, error) {
	if m.MayHold == nil || m.MayHold() {
		return false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Webhook.URL() == "" {
		return false, nil
	}
	if err := m.Settings.SaveWebhook(WebhookSetting{}); err != nil {
		return false, err
	}
	m.Webhook.SetURL("") // "" is always valid
	m.webhookAt = time.Time{}
	return true, m.Settings.Publish(m.stateLocked())
}

// holds refuses w's URL where this machine may not hold one (a removal is
// fine).
func (m *Machine) holds(w WebhookSetting) error {
	if w.URL == "" || m.MayHold == nil || m.MayHold() {
		return nil
	}
	return forbidden(RuleWebhookHolders, "this machine's device is not an owner or admin of the pool; its alerts are posted by an owner's or admin's machine")
}

// setWebhookLocked checks, saves, applies and publishes w, with m.mu held.
func (m *Machine) setWebhookLocked(w WebhookSetting) error {
	if err := CheckWebhookURL(w.URL); err != nil {
		return &refusal{status: http.StatusBadRequest, code: "invalid", msg: err.Error()}
	}
	if err := m.Settings.SaveWebhook(w); err != nil {
		return err
	}
	m.Webhook.SetURL(w.URL) // checked above
	m.webhookAt = w.At
	return m.Settings.Publish(m.stateLocked())
}

// SetRule changes rule id as u says (owners, admins and this machine's
// own user), saves and publishes the rules.
func (m *Machine) SetRule(c Caller, id string, u RuleUpdate) (Rule, error) {
	if err := configures(c, "alert rules"); err != nil {
		return Rule{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rules, r, err := Merge(m.Eval.Rules(), id, u)
	if err != nil {
		return Rule{}, &refusal{status: http.StatusBadRequest, code: "invalid", msg: err.Error()}
	}
	at := time.Now().UTC()
	if err := m.Settings.SaveRules(rules, at); err != nil {
		return Rule{}, err
	}
	if err := m.Eval.SetRules(rules); err != nil {
		return Rule{}, err
	}
	m.rulesAt = at
	return r, m.Settings.Publish(m.stateLocked())
}

// SetWebhook sets the URL alerts are posted to (owners, admins and this
// machine's own user), as set at w.At: the time the one who set it gave
// every machine, so that all hold the same (zero, or later than a minute
// from now: now).
func (m *Machine) SetWebhook(c Caller, w WebhookSetting) error {
	if err := configures(c, "the alert webhook"); err != nil {
		return err
	}
	if err := m.holds(w); err != nil {
		return err
	}
	if now := time.Now().UTC(); w.At.IsZero() || w.At.After(now.Add(time.Minute)) {
		w.At = now
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setWebhookLocked(w)
}

// WebhookFor returns the webhook to an owner's or admin's device (a
// machine that missed it fetches it; see AdoptWebhook) or this machine's
// own user; members, viewers and strangers get nothing.
func (m *Machine) WebhookFor(c Caller) (WebhookSetting, error) {
	if !c.Local && c.Role != RoleOwner && c.Role != RoleAdmin {
		role := c.Role
		if role == "" {
			role = "not a member"
		}
		return WebhookSetting{}, forbidden(RuleWebhookHolders, "this device is %s", role)
	}
	return m.WebhookSetting(), nil
}

// Mute adds or ends a mute (anyone of the pool but viewers), checked
// whoever asks (see checkMute and maxMutes), recorded as c's: a mute in
// force is renewed or lifted by its author, admins and owners of the pool
// and this machine's own user; a pinned rule is muted by that user only
// (see mayChangeMute).
func (m *Machine) Mute(c Caller, mu Mute) (Mute, error) {
	switch {
	case c.Local:
	case c.Role == RoleViewer:
		return Mute{}, forbidden(RuleViewerMute, "this device is a viewer of the pool")
	case c.Role != RoleOwner && c.Role != RoleAdmin && c.Role != RoleMember:
		return Mute{}, forbidden("members only", "this device is not a member of the pool")
	}
	if !ruleID.MatchString(mu.Rule) {
		return Mute{}, &refusal{status: http.StatusBadRequest, code: "invalid", msg: fmt.Sprintf("mute: rule %q is not a rule ID", mu.Rule)}
	}
	if mu.Node == "" {
		mu.Node = m.Eval.node
	}
	mu.By = c.ID
	if c.Local {
		mu.By = m.Eval.node
	}
	now := time.Now()
	if err := m.checkMute(mu, now); err != nil {
		return Mute{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mayChangeMute(c, mu, now); err != nil {
		return Mute{}, err
	}
	if err := m.Eval.Mute(mu); err != nil {
		return Mute{}, err
	}
	if err := m.Settings.SaveMutes(m.Eval.Mutes(time.Now())); err != nil {
		return Mute{}, err
	}
	return mu, m.Settings.Publish(m.stateLocked())
}

// configures refuses a caller that is neither this machine's user nor an
// owner or admin of the pool.
func configures(c Caller, what string) error {
	if c.Local || c.Role == RoleOwner || c.Role == RoleAdmin {
		return nil
	}
	role := c.Role
	if role == "" {
		role = "not a member"
	}
	return forbidden(RuleConfigure, "owners and admins set %s; this device is %s", what, role)
}

// refusal is an error answered with its own status and code.
type refusal struct {
	status    int
	code, msg string
}

func (r *refusal) Error() string { return r.msg }

func forbidden(rule, format string, a ...any) error {
	return &refusal{status: http.StatusForbidden, code: "forbidden", msg: rule + ": " + fmt.Sprintf(format, a...)}
}

// PinRequest pins or unpins a rule (PUT /v1/alerts/pins/{rule}).
type PinRequest struct {
	Pinned bool `json:"pinned"`
}

// Handler serves m to the pool: GET /v1/alerts/rules, PUT
// /v1/alerts/rules/{id} (RuleUpdate), POST /v1/alerts/mute (Mute), PUT
// /v1/alerts/pins/{rule} (PinRequest, this machine's own user), GET
// and PUT /v1/alerts/webhook (WebhookSetting); caller names who asks.
func Handler(m *Machine, caller func(*http.Request) Caller) *peerapi.Mux {
	h := map[peerapi.Spec]http.HandlerFunc{}
	h[routeRules.Spec] = func(w http.ResponseWriter, r *http.Request) {
		reply(w, m.Eval.Rules(), nil)
	}
	h[routeState.Spec] = func(w http.ResponseWriter, r *http.Request) {
		reply(w, m.State(), nil)
	}
	h[routeSetRule.Spec] = func(w http.ResponseWriter, r *http.Request) {
		var u RuleUpdate
		if err := decode(r.Body, &u); err != nil {
			reply(w, nil, err)
			return
		}
		rule, err := m.SetRule(caller(r), r.PathValue("id"), u)
		reply(w, rule, err)
	}
	h[routeMute.Spec] = func(w http.ResponseWriter, r *http.Request) {
		var mu Mute
		if err := decode(r.Body, &mu); err != nil {
			reply(w, nil, err)
			return
		}
		out, err := m.Mute(caller(r), mu)
		reply(w, out, err)
	}
	h[routePin.Spec] = func(w http.ResponseWriter, r *http.Request) {
		var req PinRequest
		if err := decode(r.Body, &req); err != nil {
			reply(w, nil, err)
			return
		}
		pins, err := m.Pin(caller(r), r.PathValue("rule"), req.Pinned)
		reply(w, pins, err)
	}
	h[routeWebhook.Spec] = func(w http.ResponseWriter, r *http.Request) {
		wh, err := m.WebhookFor(caller(r))
		reply(w, wh, err)
	}
	h[routeSetWebhook.Spec] = func(w http.ResponseWriter, r *http.Request) {
		var req WebhookSetting
		if err := decode(r.Body, &req); err != nil {
			reply(w, nil, err)
			return
		}
		err := m.SetWebhook(caller(r), req)
		if err == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		reply(w, nil, err)
	}
	return Routes.Mux(h)
}

// decode reads a JSON body of at most 64 KiB (network input).
func decode(body io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &refusal{status: http.StatusBadRequest, code: "invalid", msg: "decode the request: " + err.Error()}
	}
	return nil
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, code := http.StatusInternalServerError, "internal"
		var r *refusal
		if errors.As(err, &r) {
			status, code = r.status, r.code
		}
		httperr.Write(w, status, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) // the client went away: nothing to tell it
}
