// Package peerapitest checks a serving package's table of peer calls
// against its handler: every call, made through the package's typed
// client, must reach the handler the table registers for it.
package peerapitest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/peerapi"
)

// Loopback is a peerapi.Doer that serves every request on Handler in this
// process, as the machine's peer handler would, and records the pattern
// that served each.
type Loopback struct {
	Handler http.Handler
	// Prepare, when set, changes each request before it is served (a
	// caller's proven identity, say).
	Prepare func(*http.Request) *http.Request

	mu       sync.Mutex // guards patterns
	patterns []string
}

// RefusedError is a reply other than a 2xx.
type RefusedError struct {
	Status        int
	Code, Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// Do implements peerapi.Doer.
func (l *Loopback) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	req := httptest.NewRequestWithContext(ctx, r.Method, "https://node"+r.Path, r.Body)
	for k, v := range r.Header {
		req.Header[k] = v
	}
	resp := l.serve(req)
	if resp.StatusCode >= 300 {
		b := httperr.Read(resp)
		return nil, &RefusedError{Status: resp.StatusCode, Code: b.Code, Message: b.Message}
	}
	return resp.Body, nil
}

// RoundTrip implements http.RoundTripper, for a client that speaks HTTP
// itself (a copy's reads, folders.HTTPSource).
func (l *Loopback) RoundTrip(r *http.Request) (*http.Response, error) {
	req := httptest.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), r.Body)
	req.Header = r.Header.Clone()
	return l.serve(req), nil
}

func (l *Loopback) serve(req *http.Request) *http.Response {
	if l.Prepare != nil {
		req = l.Prepare(req)
	}
	w := httptest.NewRecorder()
	l.Handler.ServeHTTP(w, req)
	l.mu.Lock()
	l.patterns = append(l.patterns, req.Pattern)
	l.mu.Unlock()
	return w.Result()
}

// Served returns the patterns that served the requests since the last
// call, and forgets them.
func (l *Loopback) Served() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.patterns
	l.patterns = nil
	return p
}

// RoundTrip runs cases[pattern] for every call of t, in the table's order
// (a case may rely on what an earlier one did), each with a Conn
// through l, and wants every request the case made served by the
// handler registered for that call's pattern (a path typo or a call missing
// from the mux fails); a call without a case, a case without a call, and a
// case that makes no request fail too. A case checks what its client
// decoded.
func RoundTrip(t *testing.T, table *peerapi.Table, l *Loopback, cases map[string]func(t *testing.T, c peerapi.Conn)) {
	t.Helper()
	c := peerapi.Conn{Doer: l, Node: "node"}
	for _, s := range table.Specs() {
		name := s.Pattern()
		test, ok := cases[name]
		if !ok {
			t.Errorf("call %s has no round trip: add one", name)
			continue
		}
		delete(cases, name)
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			l.Served()
			test(t, c)
			served := l.Served()
			if len(served) == 0 {
				t.Errorf("the round trip of %s made no request", name)
			}
			for _, p := range served {
				if p != name {
					t.Errorf("a request of %s was served by %q; want %q", name, p, name)
				}
			}
		})
	}
	for name := range cases {
		t.Errorf("round trip %s has no call in the table", name)
	}
}
