package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labpool/labpool/app"
)

// Alerts lists the alerts of the pool that fired in the last seconds (a
// week when 0) and every active one.
func (c *Client) Alerts(ctx context.Context, seconds int) ([]app.Alert, error) {
	return Call[[]app.Alert](ctx, c, http.MethodGet, "/api/v1/alerts?since="+strconv.Itoa(seconds), nil)
}

var _ app.AlertSource = (*Client)(nil)

// AlertRules lists the rules a machine (this one when node is empty)
// evaluates.
func (c *Client) AlertRules(ctx context.Context, node string) ([]app.AlertRule, error) {
	return Call[[]app.AlertRule](ctx, c, http.MethodGet, "/api/v1/alerts/rules?node="+url.QueryEscape(node), nil)
}

// AlertMutes lists the mutes in force, with their authors, and the pinned
// rules of a machine (this one when node is empty).
func (c *Client) AlertMutes(ctx context.Context, node string) (app.AlertMutes, error) {
	return Call[app.AlertMutes](ctx, c, http.MethodGet, "/api/v1/alerts/mutes?node="+url.QueryEscape(node), nil)
}

// PinAlert pins or unpins a rule on this machine (its own user only).
func (c *Client) PinAlert(ctx context.Context, req app.PinRequest) ([]string, error) {
	return Call[[]string](ctx, c, http.MethodPut, "/api/v1/alerts/pins/"+url.PathEscape(req.Rule), req)
}

// SetAlertRule changes (or adds) a rule on every machine of the pool.
func (c *Client) SetAlertRule(ctx context.Context, req app.AlertRuleRequest) (app.AlertRuleChange, error) {
	return Call[app.AlertRuleChange](ctx, c, http.MethodPut, "/api/v1/alerts/rules/"+url.PathEscape(req.ID), req.AlertRuleUpdate)
}

// MuteAlert mutes (Seconds 0: unmutes) an alert's rule on its machine.
func (c *Client) MuteAlert(ctx context.Context, req app.MuteRequest) (app.AlertMute, error) {
	return Call[app.AlertMute](ctx, c, http.MethodPost, "/api/v1/alerts/mute", req)
}

// AlertWebhook returns the pool's webhook as this machine has it.
func (c *Client) AlertWebhook(ctx context.Context) (app.AlertWebhook, error) {
	return Call[app.AlertWebhook](ctx, c, http.MethodGet, "/api/v1/alerts/webhook", nil)
}

// SetAlertWebhook sets (or, empty, removes) the pool's webhook on every
// machine.
func (c *Client) SetAlertWebhook(ctx context.Context, req app.WebhookRequest) (app.Applied, error) {
	return Call[app.Applied](ctx, c, http.MethodPut, "/api/v1/alerts/webhook", req)
}
