package replica

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// A device removed from the pool is told so on the stream path, with the
// proof: members answer its stream request with 403 and a Told body that
// carries the pool's signed records. The device hands them to OnPool, which
// checks them as it checks any relayed record; once its own log says it was
// removed, it follows nobody (reconcile), so it stops calling the pool's
// machines. A member's say-so alone removes nothing.

// CodeRemoved is the refusal's code.
const CodeRemoved = "removed"

// Told is what a removed device is told: the {code, message} of every
// refusal (internal/httperr), then, on a line of its own, the pool's signed
// records, so that a reader of the first value alone (httperr.Read, which
// reads 4 KiB) finds the usual refusal.
type Told struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Pool    []json.RawMessage `json:"pool,omitempty"`
}

// WriteRemoved answers a removed device's stream request.
func WriteRemoved(w http.ResponseWriter, msg string, pool []json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	enc := json.NewEncoder(w)
	if enc.Encode(Told{Code: CodeRemoved, Message: msg}) == nil {
		enc.Encode(Told{Pool: pool}) // the device went away: nothing to tell it
	}
}

// readTold reads a refusal's body; ok says it tells of a removal.
func readTold(resp *http.Response) (Told, bool) {
	if resp.StatusCode != http.StatusForbidden {
		return Told{}, false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxFrame))
	dec := json.NewDecoder(bytes.NewReader(body))
	var t, recs Told
	if dec.Decode(&t) != nil || t.Code != CodeRemoved {
		resp.Body = io.NopCloser(bytes.NewReader(body)) // for the caller's message
		return Told{}, false
	}
	if dec.Decode(&recs) == nil {
		t.Pool = recs.Pool
	}
	if len(t.Pool) > maxPool {
		t.Pool = t.Pool[:maxPool]
	}
	return t, true
}
