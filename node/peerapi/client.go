package peerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
)

// maxReply bounds a JSON reply (16 MiB).
const maxReply = 16 << 20

// Request is one request to a machine's peer API.
type Request struct {
	Method string
	Path   string // with its query
	Body   io.Reader
	Header http.Header // nil: none
}

// Doer sends one request to the machine node and returns the body of its
// success; a refusal or a failure is an error that names it (app.Service
// is one).
type Doer interface {
	Do(ctx context.Context, node string, req Request) (io.ReadCloser, error)
}

// Conn is one machine, reached through a Doer.
type Conn struct {
	Doer Doer
	Node string
}

// Args are what a call carries besides its body: the values of its path's
// wildcards in their order, its query and its headers.
type Args struct {
	Path   []string
	Query  url.Values
	Header http.Header
}

// Path is Args with the path's wildcard values alone.
func Path(values ...string) Args { return Args{Path: values} }

// Call makes the call r on c with a JSON body in (none when In is None) and
// decodes its JSON reply (none when Out is None).
func (r Route[In, Out]) Call(ctx context.Context, c Conn, a Args, in In) (Out, error) {
	var out Out
	var body io.Reader
	if r.In != reflect.TypeFor[None]() {
		b, err := json.Marshal(in)
		if err != nil {
			return out, fmt.Errorf("encode %s: %w", r.Pattern(), err)
		}
		body = bytes.NewReader(b)
		a.Header = withJSON(a.Header)
	}
	rc, err := r.Open(ctx, c, a, body)
	if err != nil {
		return out, err
	}
	defer rc.Close()
	if r.Out == reflect.TypeFor[None]() {
		return out, nil
	}
	if err := json.NewDecoder(io.LimitReader(rc, maxReply)).Decode(&out); err != nil {
		return out, fmt.Errorf("decode reply of %s to %s: %w", short(c.Node), r.Pattern(), err)
	}
	return out, nil
}

// Open makes the call r on c with body (nil: none) and returns its reply's
// bytes, for a call whose body or reply is a Stream.
func (r Route[In, Out]) Open(ctx context.Context, c Conn, a Args, body io.Reader) (io.ReadCloser, error) {
	path, err := r.URL(a.Path, a.Query)
	if err != nil {
		return nil, err
	}
	return c.Doer.Do(ctx, c.Node, Request{Method: r.Method, Path: path, Body: body, Header: a.Header})
}

func withJSON(h http.Header) http.Header {
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return h
}

// short is the first characters of a device ID, for messages.
func short(id string) string {
	if len(id) > 7 {
		return id[:7]
	}
	return id
}
