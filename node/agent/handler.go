package agent

import (
	"encoding/json"
	"net/http"

	"github.com/labpool/labpool/internal/httperr"
)

// Handler serves t's info and latest sample as JSON.
func Handler(t *Telemetry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/node/info", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, t.Info())
	})
	mux.HandleFunc("GET /v1/node/sample", func(w http.ResponseWriter, r *http.Request) {
		s, ok := t.Latest()
		if !ok {
			httperr.Write(w, http.StatusServiceUnavailable, "no_sample", "no sample taken yet")
			return
		}
		writeJSON(w, http.StatusOK, s)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) // the client went away, or v is a plain struct that cannot fail
}
