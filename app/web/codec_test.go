package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// TestErrorCodecRoundTrip encodes errors as the server does and decodes the
// reply as the client does: the code survives, and so does errors.Is.
func TestErrorCodecRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		code   string
		is     error
	}{
		{"invalid", fmt.Errorf("%w: bad code", app.ErrInvalid), 400, "invalid", app.ErrInvalid},
		{"not found", fmt.Errorf("job x: %w", app.ErrNotFound), 404, "not_found", app.ErrNotFound},
		{"forbidden", app.ErrForbidden, 403, "forbidden", app.ErrForbidden},
		{"read only", app.ErrReadOnly, 503, "no_daemon", app.ErrReadOnly},
		{"timeout", context.DeadlineExceeded, 504, "timeout", context.DeadlineExceeded},
		{"a node's answer", fmt.Errorf("relay: %w", &app.APIError{Status: 409, Code: "no_fit", Message: "no gpu free"}), 409, "no_fit", nil},
		{"internal", errors.New("disk on fire"), 500, "internal", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			web.WriteError(w, tt.err)
			got := web.ReadError(w.Result())
			var apiErr *app.APIError
			if !errors.As(got, &apiErr) || apiErr.Status != tt.status || apiErr.Code != tt.code || apiErr.Message != tt.err.Error() {
				t.Fatalf("round trip of %v = %#v, want status %d code %q", tt.err, got, tt.status, tt.code)
			}
			if tt.is != nil && !errors.Is(got, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false after the round trip", got, tt.is)
			}
			for _, other := range []error{app.ErrInvalid, app.ErrNotFound, app.ErrForbidden, app.ErrReadOnly} {
				if other != tt.is && errors.Is(got, other) {
					t.Errorf("errors.Is(%v, %v) = true, want false", got, other)
				}
			}
			if status, body := web.Encode(tt.err); status != tt.status || body.Code != tt.code || body.Message != tt.err.Error() {
				t.Errorf("Encode(%v) = %d %#v, want status %d code %q", tt.err, status, body, tt.status, tt.code)
			}
		})
	}
}
