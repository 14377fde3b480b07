package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labpool/labpool/app"
)

// The local API's errors travel as {"code": "...", "message": "..."} with a
// 4xx/5xx status. Encode and WriteError make them on the server, the
// client's ReadError makes an *app.APIError of them again (errors.Is-equal
// to the sentinel of its code). The window's page reads them as a browser
// does: its calls reach this API through app/window.

// Encode returns the status and body that answer err.
func Encode(err error) (int, app.Error) {
	status, code := app.ErrorCode(err)
	return status, app.Error{Code: code, Message: strings.TrimSpace(err.Error())}
}

// WriteError answers err as {code, message} with its status.
func WriteError(w http.ResponseWriter, err error) {
	status, body := Encode(err)
	writeBody(w, status, body)
}

// ReadError decodes a failed reply into an *app.APIError that keeps its
// status and code.
func ReadError(resp *http.Response) error { return app.ErrorFromResponse(resp) }

// writeError answers a refusal of the handler itself (a bad request, an
// unknown path) with its own status and code.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeBody(w, status, app.Error{Code: code, Message: strings.TrimSpace(msg)})
}

func writeBody(w http.ResponseWriter, status int, body app.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
