package agent

import "net/http"

// Route is a handler served at one path for one method.
type Route struct {
	Method, Path string
	Handler      http.Handler
}

// Parts are what this machine serves to the pool, built by their owners.
type Parts struct {
	Telemetry *Telemetry   // GET /v1/node/...
	Stream    Route        // the replica's stream, members only
	Join      Route        // joining the pool: open to strangers
	Jobs      http.Handler // /v1/jobs..., /v1/gpus/...
	Images    http.Handler // /v1/images... (node/containers)
	Folders   http.Handler // /v1/folders...
	Transfers http.Handler // /v1/transfers...
	Alerts    http.Handler // /v1/alerts/...; nil: none
	Reserve   http.Handler // /v1/reservations... (node/reserve); nil: none
	// Authorize lets through to h only the members of the pool, and
	// anyone to the paths open (rate-limited).
	Authorize func(open []string, h http.Handler) http.Handler
}

// PeerHandler is what members (and, for joining only, strangers) reach.
func PeerHandler(p Parts) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/node/", Handler(p.Telemetry))
	mux.Handle(p.Stream.Method+" "+p.Stream.Path, p.Stream.Handler)
	mux.Handle(p.Join.Method+" "+p.Join.Path, p.Join.Handler)
	for _, path := range []string{"/v1/jobs", "/v1/jobs/", "/v1/gpus/"} {
		mux.Handle(path, p.Jobs)
	}
	mux.Handle("/v1/images", p.Images)
	mux.Handle("/v1/images/", p.Images)
	mux.Handle("/v1/folders", p.Folders)
	mux.Handle("/v1/folders/", p.Folders)
	mux.Handle("/v1/transfers", p.Transfers)
	mux.Handle("/v1/transfers/", p.Transfers)
	if p.Alerts != nil {
		mux.Handle("/v1/alerts/", p.Alerts)
	}
	if p.Reserve != nil {
		mux.Handle("/v1/reservations", p.Reserve)
		mux.Handle("/v1/reservations/", p.Reserve)
	}
	return p.Authorize([]string{p.Join.Path}, mux)
}
