package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// APIError is an error answered by a daemon or a node: an HTTP status and
// the {code, message} of its body. It is errors.Is-comparable to the
// sentinel its code stands for: an answer "not_found" is ErrNotFound.
type APIError struct {
	Status  int    // HTTP status
	Code    string // machine-readable, e.g. "not_found"
	Message string // safe to show a person
}

func (e *APIError) Error() string { return e.Message }

// Is reports whether target is the sentinel of e's code.
func (e *APIError) Is(target error) bool {
	for _, k := range errorKinds {
		if k.code == e.Code {
			return k.err == target
		}
	}
	return false
}

// errorKinds are the sentinels with a code and status of their own on the
// wire; every other error is 500 "internal".
var errorKinds = []struct {
	err    error
	status int
	code   string
}{
	{ErrInvalid, http.StatusBadRequest, "invalid"},
	{ErrNotFound, http.StatusNotFound, "not_found"},
	{ErrReadOnly, http.StatusServiceUnavailable, "no_daemon"},
	{ErrForbidden, http.StatusForbidden, "forbidden"},
	{context.DeadlineExceeded, http.StatusGatewayTimeout, "timeout"},
}

// ErrorCode returns the HTTP status and the code that answer err: those of
// an *APIError it wraps, of a sentinel it wraps, or 500 "internal".
func ErrorCode(err error) (status int, code string) {
	var e *APIError
	if errors.As(err, &e) {
		return e.Status, e.Code
	}
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.status, k.code
		}
	}
	return http.StatusInternalServerError, "internal"
}

// ErrorFromResponse decodes the {code, message} body of a failed reply into
// an *APIError.
func ErrorFromResponse(resp *http.Response) error {
	var e Error
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &e) != nil || e.Message == "" {
		e = Error{Code: "http", Message: fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	return &APIError{Status: resp.StatusCode, Code: e.Code, Message: e.Message}
}
