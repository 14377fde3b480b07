package transport

import (
	"fmt"
	"math"
	"net/http"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/sync/peer"
)

// Authorize serves h to the devices allowed admits. A path listed in open
// (matched exactly, e.g. "/v1/pool/join") is served to any device with a
// valid certificate; every other path answers 403 to the rest.
func Authorize(allowed func(peer.ID) bool, open []string, h http.Handler) http.Handler {
	return AuthorizeLimited(nil, allowed, open, h)
}

// AuthorizeLimited is Authorize that charges each of its refusals to the
// source address in l and answers 429 to a source that is not admitted
// (on any path, open ones included) once its budget of refusals is spent.
// Admitted devices are never limited. Wrap the handlers of open paths in
// RateLimited with the same l to charge their refusals too.
func AuthorizeLimited(l *Limiter, allowed func(peer.ID) bool, open []string, h http.Handler) http.Handler {
	isOpen := make(map[string]bool, len(open))
	for _, p := range open {
		isOpen[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := sourceIP(r.RemoteAddr)
		id, ok := PeerID(r)
		if ok && allowed(id) {
			h.ServeHTTP(w, r)
			return
		}
		if l.Exhausted(src) {
			writeLimited(w, l)
			return
		}
		switch {
		case !ok:
			l.Charge(src)
			httperr.Write(w, http.StatusForbidden, "no_certificate", "no device certificate")
		case !isOpen[r.URL.Path]:
			l.Charge(src)
			httperr.Write(w, http.StatusForbidden, "not_member", "this device is not a member of the pool")
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// RateLimited serves h to each source address until h has refused it
// (401 or 403) more often than its budget in l allows; after that the
// source gets 429 without reaching h until its budget refills. Use it
// around the join handler with the Limiter given to AuthorizeLimited.
func RateLimited(l *Limiter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := sourceIP(r.RemoteAddr)
		if l.Exhausted(src) {
			writeLimited(w, l)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized || sw.status == http.StatusForbidden {
			l.Charge(src)
		}
	})
}

// writeLimited answers 429 with the rule and when to try again.
func writeLimited(w http.ResponseWriter, l *Limiter) {
	wait := 60
	if l.cfg.Rate > 0 {
		wait = int(math.Ceil(1 / l.cfg.Rate))
	}
	w.Header().Set("Retry-After", fmt.Sprint(wait))
	httperr.Write(w, http.StatusTooManyRequests, "rate_limited",
		fmt.Sprintf("too many %s from this address (%d, then %.0f a minute): try again in %d s",
			l.cfg.What, l.cfg.Burst, l.cfg.Rate*60, wait))
}

// statusWriter remembers the status h answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes through, for streaming handlers.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
