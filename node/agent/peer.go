package agent

import (
	"net/http"

	"github.com/labpool/labpool/node/peerapi"
)

// Route is a handler served at one path for one method.
type Route struct {
	Method, Path string
	Handler      http.Handler
}

// Parts are what this machine serves to the pool, built by their owners:
// each serving package's handler carries its table of calls
// (node/peerapi), which PeerHandler mounts.
type Parts struct {
	Telemetry *Telemetry   // Routes
	Stream    Route        // the replica's stream, members only
	Join      Route        // joining the pool: open to strangers
	Jobs      *peerapi.Mux // jobs.Routes
	Images    *peerapi.Mux // containers.ImageRoutes
	Folders   *peerapi.Mux // folders.Routes
	Transfers *peerapi.Mux // copies.Routes
	Alerts    *peerapi.Mux // alerts.Routes; nil: none
	Reserve   *peerapi.Mux // reserve.Routes; nil: none
	// Authorize lets through to h only the members of the pool, and
	// anyone to the paths open (rate-limited).
	Authorize func(open []string, h http.Handler) http.Handler
}

// Served is what members (and, for joining only, strangers) reach, and the
// calls it serves.
type Served struct {
	http.Handler
	specs []peerapi.Spec
}

// Specs returns every call s serves, the stream and the join included.
func (s *Served) Specs() []peerapi.Spec { return append([]peerapi.Spec(nil), s.specs...) }

// PeerHandler mounts every call of the parts' tables, behind Authorize. Two
// parts that declare one call panic.
func PeerHandler(p Parts) *Served {
	mux := http.NewServeMux()
	s := &Served{}
	for _, rt := range []struct {
		Route
		who peerapi.Who
	}{{p.Stream, peerapi.Members}, {p.Join, peerapi.Anyone}} {
		spec := peerapi.Spec{Method: rt.Method, Path: rt.Path, Who: rt.who}
		mux.Handle(spec.Pattern(), rt.Handler)
		s.specs = append(s.specs, spec)
	}
	for _, m := range []*peerapi.Mux{Handler(p.Telemetry), p.Jobs, p.Images, p.Folders, p.Transfers, p.Alerts, p.Reserve} {
		if m == nil {
			continue
		}
		for _, spec := range m.Table().Specs() {
			mux.Handle(spec.Pattern(), m)
			s.specs = append(s.specs, spec)
		}
	}
	s.Handler = p.Authorize([]string{p.Join.Path}, mux)
	return s
}
