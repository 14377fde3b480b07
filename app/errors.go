package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// APIError is an error answered by a daemon or a node: an HTTP status and
// the {code, message} of its body.
type APIError struct {
	Status  int    // HTTP status
	Code    string // machine-readable, e.g. "not_found"
	Message string // safe to show a person
}

func (e *APIError) Error() string { return e.Message }

// ErrorFromResponse decodes the {code, message} body of a failed reply.
func ErrorFromResponse(resp *http.Response) error {
	var e Error
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &e) != nil || e.Message == "" {
		e = Error{Code: "http", Message: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	return &APIError{Status: resp.StatusCode, Code: e.Code, Message: e.Message}
}

// decodeError is ErrorFromResponse for the node calls of jobs.go.
var decodeError = ErrorFromResponse
