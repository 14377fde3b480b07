package transport

import (
	"encoding/json"
	"net/http"

	"github.com/labpool/labpool/sync/peer"
)

// Authorize serves h to the devices allowed admits. A path listed in open
// (matched exactly, e.g. "/v1/pool/join") is served to any device with a
// valid certificate; every other path answers 403 to the rest.
func Authorize(allowed func(peer.ID) bool, open []string, h http.Handler) http.Handler {
	isOpen := make(map[string]bool, len(open))
	for _, p := range open {
		isOpen[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := PeerID(r)
		if !ok {
			writeError(w, http.StatusForbidden, "no_certificate", "no device certificate")
			return
		}
		if !isOpen[r.URL.Path] && !allowed(id) {
			writeError(w, http.StatusForbidden, "not_member", "this device is not a member of the pool")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// writeError answers {"code": ..., "message": ...} as labpool APIs do.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, msg})
}
