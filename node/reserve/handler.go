package reserve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/labpool/labpool/internal/httperr"
)

// The peer routes of reservations, in one table: the handler serves them
// and the client beside it calls them, from these constants only.
const (
	PathReservations = "/v1/reservations"
	pathOne          = "/v1/reservations/{id}"
)

// Route is one peer route.
type Route struct{ Method, Pattern string }

// Routes are every peer route Handler serves.
var Routes = []Route{
	{http.MethodPost, PathReservations},
	{http.MethodGet, PathReservations},
	{http.MethodDelete, pathOne},
}

// maxRequest bounds a reservation request's body.
const maxRequest = 4 << 10

// Handler serves this machine's reservations to members: everyone lists
// them; members ask for one (Book.Reserve) and cancel theirs
// (Book.Cancel). caller names who asks (the device the transport proved,
// and its role).
func Handler(b *Book, caller func(*http.Request) Caller) http.Handler {
	mux := http.NewServeMux()
	h := map[string]http.HandlerFunc{
		http.MethodPost + " " + PathReservations: func(w http.ResponseWriter, r *http.Request) {
			req, err := DecodeRequest(r.Body)
			if err != nil {
				reply(w, nil, err)
				return
			}
			res, err := b.Reserve(caller(r), req)
			reply(w, res, err)
		},
		http.MethodGet + " " + PathReservations: func(w http.ResponseWriter, r *http.Request) {
			reply(w, b.List(), nil)
		},
		http.MethodDelete + " " + pathOne: func(w http.ResponseWriter, r *http.Request) {
			res, err := b.Cancel(caller(r), r.PathValue("id"))
			reply(w, res, err)
		},
	}
	for _, rt := range Routes {
		mux.Handle(rt.Method+" "+rt.Pattern, h[rt.Method+" "+rt.Pattern])
	}
	return mux
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

// Call calls one route of a machine's peer API: in is sent as JSON (nil:
// no body), the reply decoded into out (nil: ignored); a refusal comes
// back as an error with the machine's message (app.Service.NodeCall).
type Call func(ctx context.Context, method, path string, in, out any) error

// Ask asks the machine behind call for a reservation.
func Ask(ctx context.Context, call Call, req Request) (Reservation, error) {
	var r Reservation
	return r, call(ctx, http.MethodPost, PathReservations, req, &r)
}

// ListOf lists the reservations of the machine behind call.
func ListOf(ctx context.Context, call Call) ([]Reservation, error) {
	var rs []Reservation
	return rs, call(ctx, http.MethodGet, PathReservations, nil, &rs)
}

// CancelAt cancels reservation id on the machine behind call.
func CancelAt(ctx context.Context, call Call, id string) (Reservation, error) {
	var r Reservation
	return r, call(ctx, http.MethodDelete, PathReservations+"/"+url.PathEscape(id), nil, &r)
}
