package reserve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/peerapi"
)

// Routes is the reservations API this machine serves to the pool
// (node/peerapi says how to add a call); Client calls it.
var Routes = &peerapi.Table{}

var (
	routeAsk    = peerapi.Add[Request, Reservation](Routes, http.MethodPost, "/v1/reservations", peerapi.NonViewers, RuleWho)
	routeList   = peerapi.Add[peerapi.None, []Reservation](Routes, http.MethodGet, "/v1/reservations", peerapi.Members, "")
	routeCancel = peerapi.Add[peerapi.None, Reservation](Routes, http.MethodDelete, "/v1/reservations/{id}", peerapi.Members, "")
)

// maxRequest bounds a reservation request's body.
const maxRequest = 4 << 10

// Handler serves this machine's reservations to members: everyone lists
// them; members ask for one (Book.Reserve) and cancel theirs
// (Book.Cancel). caller names who asks (the device the transport proved,
// and its role).
func Handler(b *Book, caller func(*http.Request) Caller) *peerapi.Mux {
	return Routes.Mux(map[peerapi.Spec]http.HandlerFunc{
		routeAsk.Spec: func(w http.ResponseWriter, r *http.Request) {
			req, err := DecodeRequest(r.Body)
			if err != nil {
				reply(w, nil, err)
				return
			}
			res, err := b.Reserve(caller(r), req)
			reply(w, res, err)
		},
		routeList.Spec: func(w http.ResponseWriter, r *http.Request) {
			reply(w, b.List(), nil)
		},
		routeCancel.Spec: func(w http.ResponseWriter, r *http.Request) {
			res, err := b.Cancel(caller(r), r.PathValue("id"))
			reply(w, res, err)
		},
	})
}

// DecodeRequest reads a reservation request (network input): one JSON
// object of known fields, at most maxRequest bytes.
func DecodeRequest(r io.Reader) (Request, error) {
	var req Request
	dec := json.NewDecoder(io.LimitReader(r, maxRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, refuse(RuleForm, "decode the reservation request: %v", err)
	}
	return req, nil
}

func reply(w http.ResponseWriter, v any, err error) {
	var e *Error
	switch {
	case errors.As(err, &e) && e.NotFound:
		httperr.Write(w, http.StatusNotFound, "not_found", err.Error())
	case errors.As(err, &e) && e.Forbidden:
		httperr.Write(w, http.StatusForbidden, "forbidden", err.Error())
	case errors.As(err, &e):
		httperr.Write(w, http.StatusBadRequest, "refused", err.Error())
	case err != nil:
		httperr.Write(w, http.StatusUnprocessableEntity, "failed", err.Error())
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
}

// Client calls the reservations API (Routes) of one machine.
type Client struct{ peerapi.Conn }

// Ask asks the machine for a reservation.
func (c Client) Ask(ctx context.Context, req Request) (Reservation, error) {
	return routeAsk.Call(ctx, c.Conn, peerapi.Args{}, req)
}

// List lists the machine's reservations.
func (c Client) List(ctx context.Context) ([]Reservation, error) {
	return routeList.Call(ctx, c.Conn, peerapi.Args{}, peerapi.None{})
}

// Cancel cancels reservation id on the machine.
func (c Client) Cancel(ctx context.Context, id string) (Reservation, error) {
	return routeCancel.Call(ctx, c.Conn, peerapi.Path(id), peerapi.None{})
}
