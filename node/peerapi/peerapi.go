// Package peerapi is how a machine calls another: each serving package
// (node/jobs, node/containers, node/folders, node/folders/copies,
// node/alerts, node/agent) declares its calls in one Table beside its
// handler, and that table registers the handler (Table.Mux), builds the
// typed client's requests (Route.Call, Route.Open), is mounted by
// node/agent's PeerHandler and is what app/daemon's role matrix asks. No
// caller writes a "/v1/..." path.
//
// # How to add a peer call
//
//  1. Declare it in the serving package's table, with the Go types of its
//     body and reply, who may call it and the rule its refusals name:
//     routeX = peerapi.Add[XRequest, XReply](Routes, "POST", "/v1/jobs/{id}/x", peerapi.NonViewers, RuleViewerLaunch)
//  2. Serve it: its handler, and one line in the package's Handler,
//     routeX.Spec: h.x (a call without a handler, or a handler without a
//     call, panics in every test that builds the handler).
//  3. Call it: a typed client method beside it, over routeX.Call (JSON)
//     or routeX.Open (streams); callers pass a Conn
//     (app.Service.Peer(node), or any Doer).
//  4. Test it: a case in the package's TestRoundTripEveryRoute
//     (peerapitest.RoundTrip fails for a call without one, and for a
//     client whose method or path the handler does not serve).
//
// app/daemon's TestRoleMatrix then asks the call, as every call of every
// table, of a device of each role, and wants what its Who and Rule say; a
// call whose check needs a body or a query to be reached has a line in
// its routeAsks.
//
// node/agent mounts every call of the tables; a serving package that is
// new is also one field of agent.Parts and one line of the daemon's wiring.
//
// Paths never change once released: old and new agents in one pool talk to
// each other by them.
package peerapi

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
)

// Who says who may make a call. The handler enforces it, its refusals
// naming the call's rule; the table declares both, and app/daemon's role
// matrix checks that handler and table agree for every role.
type Who string

const (
	// Anyone reaches the route, strangers too (joining the pool only).
	Anyone Who = "anyone"
	// Members: every member of the pool, viewers too.
	Members Who = "members"
	// NonViewers: every member but viewers (a launch, as the machine's
	// policy also says).
	NonViewers Who = "non-viewers"
	// Admins: the pool's owners and admins.
	Admins Who = "admins"
	// AdminsOrSharer: the pool's owners and admins, and the member who
	// shared the folder the call names (its holder checks which).
	AdminsOrSharer Who = "admins or the sharer"
	// MachineOwners: the pool's owners and this machine's own user.
	MachineOwners Who = "machine owners"
	// MachineUser: this machine's own user alone (a device of the pool
	// that is this machine).
	MachineUser Who = "machine user"
	// GrantHolders: whoever carries a grant a member signed (a copy's
	// reads); no role alone.
	GrantHolders Who = "grant holders"
)

// Spec is one call a machine serves: its method, its path (a net/http
// pattern's, with {wildcards}), who may make it and the rule its refusals
// of the others name, and the Go types of its request body and reply
// (None: none; Stream: bytes, not JSON).
type Spec struct {
	Method, Path string
	Who          Who
	Rule         string // "" for Members and Anyone
	In, Out      reflect.Type
}

// Pattern is the net/http pattern of s, "METHOD /path".
func (s Spec) Pattern() string { return s.Method + " " + s.Path }

// None is the type of a call's absent body or reply.
type None struct{}

// Stream is the type of a body or reply that is bytes, not JSON: the call
// is made with Route.Open.
type Stream struct{}

// Table is a serving package's calls, in their order of declaration.
type Table struct{ specs []Spec }

// Specs returns the calls of t.
func (t *Table) Specs() []Spec { return append([]Spec(nil), t.specs...) }

// Add declares a call of t: In is its request body's type, Out its reply's;
// who may make it, and the rule its refusals of the others name ("" when
// who is Members or Anyone). Two calls of one pattern, or a rule missing
// or out of place, panic (at package initialization).
func Add[In, Out any](t *Table, method, path string, who Who, rule string) Route[In, Out] {
	s := Spec{Method: method, Path: path, Who: who, Rule: rule, In: reflect.TypeFor[In](), Out: reflect.TypeFor[Out]()}
	if open := who == Members || who == Anyone; open != (rule == "") {
		panic("peerapi: " + s.Pattern() + ": a rule is for the calls that refuse some members, and they need one")
	}
	for _, o := range t.specs {
		if o.Pattern() == s.Pattern() {
			panic("peerapi: two calls " + s.Pattern())
		}
	}
	t.specs = append(t.specs, s)
	return Route[In, Out]{s}
}

// Route is a call whose request body is an In and whose reply is an Out.
type Route[In, Out any] struct{ Spec }

// Mux serves the calls of t with their handlers: every call of t needs one,
// and every handler a call of t, or Mux panics (a programming error that
// every test building the handler finds).
func (t *Table) Mux(handlers map[Spec]http.HandlerFunc) *Mux {
	mux := http.NewServeMux()
	for _, s := range t.specs {
		h, ok := handlers[s]
		if !ok {
			panic("peerapi: no handler for " + s.Pattern())
		}
		mux.HandleFunc(s.Pattern(), h)
	}
	for s := range handlers {
		if !t.has(s) {
			panic("peerapi: a handler for " + s.Pattern() + ", which is not in the table")
		}
	}
	return &Mux{t: t, mux: mux}
}

func (t *Table) has(s Spec) bool {
	for _, o := range t.specs {
		if o == s {
			return true
		}
	}
	return false
}

// Mux is a serving package's handler: the calls of its table, and nothing
// else.
type Mux struct {
	t   *Table
	mux *http.ServeMux
}

// Table returns the calls m serves.
func (m *Mux) Table() *Table { return m.t }

func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.mux.ServeHTTP(w, r) }

// URL is the path (and query, when q is not empty) of a request of s, with
// the wildcards of its path filled by args in their order.
func (s Spec) URL(args []string, q url.Values) (string, error) {
	var b strings.Builder
	rest, n := s.Path, 0
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("path %s: an unclosed wildcard", s.Path)
		}
		if n == len(args) {
			return "", fmt.Errorf("path %s: %d values for its wildcards", s.Path, len(args))
		}
		b.WriteString(rest[:i])
		b.WriteString(url.PathEscape(args[n]))
		n++
		rest = rest[i+j+1:]
	}
	if n != len(args) {
		return "", fmt.Errorf("path %s: %d values for its %d wildcards", s.Path, len(args), n)
	}
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	return b.String(), nil
}
