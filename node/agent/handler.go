package agent

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/peerapi"
)

// Routes is the telemetry API this machine serves to the pool
// (node/peerapi says how to add a call); Client calls it.
var Routes = &peerapi.Table{}

var (
	// InfoRoute answers what this machine is; any member reaches it, which
	// is what a probe asks to learn whether it is one.
	InfoRoute   = peerapi.Add[peerapi.None, Info](Routes, "GET", "/v1/node/info", peerapi.Members, "")
	routeSample = peerapi.Add[peerapi.None, Sample](Routes, "GET", "/v1/node/sample", peerapi.Members, "")
)

// Handler serves t's info and latest sample as JSON.
func Handler(t *Telemetry) *peerapi.Mux {
	return Routes.Mux(map[peerapi.Spec]http.HandlerFunc{
		InfoRoute.Spec: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, t.Info())
		},
		routeSample.Spec: func(w http.ResponseWriter, r *http.Request) {
			s, ok := t.Latest()
			if !ok {
				httperr.Write(w, http.StatusServiceUnavailable, "no_sample", "no sample taken yet")
				return
			}
			writeJSON(w, http.StatusOK, s)
		},
	})
}

// Client calls the telemetry API (Routes) of one machine.
type Client struct{ peerapi.Conn }

// Info returns what the machine is.
func (c Client) Info(ctx context.Context) (Info, error) {
	return InfoRoute.Call(ctx, c.Conn, peerapi.Args{}, peerapi.None{})
}

// Sample returns the machine's latest sample.
func (c Client) Sample(ctx context.Context) (Sample, error) {
	return routeSample.Call(ctx, c.Conn, peerapi.Args{}, peerapi.None{})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) // the client went away, or v is a plain struct that cannot fail
}
