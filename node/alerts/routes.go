package alerts

import (
	"context"

	"github.com/labpool/labpool/node/peerapi"
)

// Routes is the alerts API this machine serves to the pool (node/peerapi
// says how to add a call); Client calls it.
var Routes = &peerapi.Table{}

type none = peerapi.None

// The rules the refusals of Routes name (and RulePinOwner,
// RuleWebhookHolders).
const (
	RuleConfigure  = "alerts: owners and admins only"
	RuleViewerMute = "viewers cannot mute alerts"
)

var (
	routeRules      = peerapi.Add[none, []Rule](Routes, "GET", "/v1/alerts/rules", peerapi.Members, "")
	routeState      = peerapi.Add[none, State](Routes, "GET", "/v1/alerts/state", peerapi.Members, "")
	routeSetRule    = peerapi.Add[RuleUpdate, Rule](Routes, "PUT", "/v1/alerts/rules/{id}", peerapi.Admins, RuleConfigure)
	routeMute       = peerapi.Add[Mute, Mute](Routes, "POST", "/v1/alerts/mute", peerapi.NonViewers, RuleViewerMute)
	routePin        = peerapi.Add[PinRequest, []string](Routes, "PUT", "/v1/alerts/pins/{rule}", peerapi.MachineUser, RulePinOwner)
	routeWebhook    = peerapi.Add[none, WebhookSetting](Routes, "GET", "/v1/alerts/webhook", peerapi.Admins, RuleWebhookHolders)
	routeSetWebhook = peerapi.Add[WebhookSetting, none](Routes, "PUT", "/v1/alerts/webhook", peerapi.Admins, RuleConfigure)
)

// Client calls the alerts API (Routes) of one machine.
type Client struct{ peerapi.Conn }

// Rules returns the machine's rules.
func (c Client) Rules(ctx context.Context) ([]Rule, error) {
	return routeRules.Call(ctx, c.Conn, peerapi.Args{}, none{})
}

// State returns the machine's alerts now.
func (c Client) State(ctx context.Context) (State, error) {
	return routeState.Call(ctx, c.Conn, peerapi.Args{}, none{})
}

// SetRule changes the rule id there.
func (c Client) SetRule(ctx context.Context, id string, u RuleUpdate) (Rule, error) {
	return routeSetRule.Call(ctx, c.Conn, peerapi.Path(id), u)
}

// Mute mutes (or unmutes) an alert of the machine.
func (c Client) Mute(ctx context.Context, mu Mute) (Mute, error) {
	return routeMute.Call(ctx, c.Conn, peerapi.Args{}, mu)
}

// Pin pins or unpins the rule there, and returns the rules pinned.
func (c Client) Pin(ctx context.Context, rule string, pinned bool) ([]string, error) {
	return routePin.Call(ctx, c.Conn, peerapi.Path(rule), PinRequest{Pinned: pinned})
}

// Webhook returns the webhook the machine posts to (to owners' and
// admins' devices only).
func (c Client) Webhook(ctx context.Context) (WebhookSetting, error) {
	return routeWebhook.Call(ctx, c.Conn, peerapi.Args{}, none{})
}

// SetWebhook sets the machine's webhook.
func (c Client) SetWebhook(ctx context.Context, w WebhookSetting) error {
	_, err := routeSetWebhook.Call(ctx, c.Conn, peerapi.Args{}, w)
	return err
}
