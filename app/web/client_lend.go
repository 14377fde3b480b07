package web

import (
	"context"
	"net/http"

	"github.com/labpool/labpool/app"
)

// Lend asks the daemon how this machine is lent now.
func (c *Client) Lend(ctx context.Context) (app.LendState, error) {
	var s app.LendState
	return s, c.do(ctx, http.MethodGet, "/api/v1/lend", nil, &s)
}

// SetLendUsing turns this machine's "I'm using it" switch on or off.
func (c *Client) SetLendUsing(ctx context.Context, u app.LendUsing) (app.LendState, error) {
	var s app.LendState
	return s, c.do(ctx, http.MethodPut, "/api/v1/lend/using", u, &s)
}
