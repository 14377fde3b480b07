// Package httperr is the {code, message} body with which labpool's HTTP
// APIs answer a refused or failed request: the peer API of node/... and the
// refusals of sync/pool and sync/transport. It imports no labpool package,
// so both trees share it; the local API (app/web) answers the same body
// through app.Error.
package httperr

import (
	"encoding/json"
	"io"
	"net/http"
)

// Body is the answer to a refused or failed request: Code for the caller
// to branch on, Message for people.
type Body struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Write answers {code, message} as JSON with status.
func Write(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(Body{code, msg}) // the client went away: nothing to tell it
}

// Read decodes the body of a failed reply (its first 4 KiB); one that is
// not a {code, message} leaves both empty.
func Read(resp *http.Response) Body {
	var b Body
	json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&b)
	return b
}
