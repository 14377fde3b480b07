package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/app"
)

// Alerts lists the alerts of the pool that fired in the last seconds (a
// week when 0) and every active one.
func (c *Client) Alerts(ctx context.Context, seconds int) ([]app.Alert, error) {
	return Call[[]app.Alert](ctx, c, http.MethodGet, "/api/v1/alerts?since="+strconv.Itoa(seconds), nil)
}

var _ app.AlertSource = (*Client)(nil)
