package transport

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakeRT answers every request with body, or with err.
type fakeRT struct {
	body string
	err  error
}

func (f fakeRT) RoundTrip(*http.Request) (*http.Response, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(f.body))}, nil
}

// TestControlResponsesAreUrgent: the control path marks its responses
// urgent as they arrive (the response, then each read that brings bytes),
// so that a copy steps aside while a member's sample is written into the
// replica; a request that failed and the end of a body mark nothing.
func TestControlResponsesAreUrgent(t *testing.T) {
	cases := []struct {
		name string
		rt   fakeRT
		want int // marks of controlUrgency
	}{
		{"a body of two reads", fakeRT{body: "0123456789abcdef"}, 3},
		{"an empty body", fakeRT{}, 1},
		{"a failed request", fakeRT{err: errors.New("connection lost")}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			marks := 0
			u := urgentReads{rt: c.rt, mark: func(d time.Duration) {
				if d != controlUrgency {
					t.Errorf("marked %v, want %v", d, controlUrgency)
				}
				marks++
			}}
			req, _ := http.NewRequest(http.MethodGet, "https://peer/x", nil)
			resp, err := u.RoundTrip(req)
			if err == nil {
				buf := make([]byte, 8)
				for err == nil {
					_, err = resp.Body.Read(buf)
				}
				resp.Body.Close()
			}
			if marks != c.want {
				t.Fatalf("%d marks, want %d", marks, c.want)
			}
		})
	}
}
