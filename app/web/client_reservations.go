package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labpool/labpool/app"
)

// Reservations lists the reservations of every machine of the pool.
func (c *Client) Reservations(ctx context.Context) ([]app.Reservation, error) {
	var rs []app.Reservation
	return rs, c.do(ctx, http.MethodGet, "/api/v1/reservations", nil, &rs)
}

// Reserve asks a machine for a reservation of its GPUs.
func (c *Client) Reserve(ctx context.Context, req app.ReserveRequest) (app.Reservation, error) {
	var r app.Reservation
	return r, c.do(ctx, http.MethodPost, "/api/v1/reservations", req, &r)
}

// Unreserve cancels a reservation.
func (c *Client) Unreserve(ctx context.Context, id string) (app.Reservation, error) {
	var r app.Reservation
	return r, c.do(ctx, http.MethodDelete, "/api/v1/reservations/"+url.PathEscape(id), nil, &r)
}
