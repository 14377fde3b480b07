package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// The roles of the matrix, in its columns' order.
var matrixRoles = []string{"owner", "admin", "member", "viewer", "removed", "stranger"}

// The refusals of the matrix: what each names (its code and message).
const (
	allowed     = ""
	notMember   = "not_member: this device is not a member of the pool"
	atDoor      = "door_path: refused: a device that is not a member of the pool may reach only" // transport's door
	toldRemoved = "removed: this device was removed from the pool by "
	noLaunch    = jobs.RuleViewerLaunch
	noTags      = "only the machine's owner replaces image tags"
	noProof     = "owner proof: none" // a launch must carry its owner's signature
)

// peerRoute is one request on a path that the agent serves to peers, and
// what each role gets: allowed, or refused naming the rule.
type peerRoute struct {
	method, path, body string
	want               [6]string // by matrixRoles
	signed             bool      // a launch that carries the asking device's proof (jobs.ProofHeader)
}

// routeAsk is how the matrix asks one call of the peer API's tables.
type routeAsk struct {
	args   []string   // the path's wildcard values; nil: wildcardExamples
	query  url.Values // nil: none
	body   string
	want   *[6]string // the whole row, where the call's Who and Rule do not say it
	signed bool       // a launch that carries the asking device's proof
}

// wildcardExamples are the path values the matrix asks with, by wildcard.
var wildcardExamples = map[string]string{"id": "nojob", "index": "0", "name": "data", "rule": "gpu-temp"}

// routeAsks are the requests the matrix makes of the calls whose check
// needs more than one request with no body; every other call of the
// tables (agent.Served.Specs) is asked with one.
var routeAsks = map[string][]routeAsk{
	// A removed device is told so on the stream, with the proof (sync/replica's Told).
	"GET /v1/replica/stream": {{want: &[6]string{allowed, allowed, allowed, allowed, toldRemoved, notMember}}},
	// Open to all: a malformed join reaches the join handler, which
	// answers 400 to anyone (TestTrust refuses a removed device's real join).
	"POST /v1/pool/join": {{body: "{}"}},
	"POST /v1/jobs": {
		{body: `{"image":"registry.example:5000/busybox:1"}`, signed: true},
		// A launch without its owner's proof is refused to every peer.
		{body: `{"image":"registry.example:5000/busybox:2"}`, want: &[6]string{noProof, noProof, noProof, noLaunch, atDoor, atDoor}},
	},
	"POST /v1/jobs/{id}/tunnel": {{query: url.Values{"port": {"8080"}}}},
	"POST /v1/images/pull": {
		{query: url.Values{"ref": {"registry.example:5000/busybox:1"}}},
		{query: url.Values{"ref": {"registry.example:5000/busybox:1"}, "force": {"1"}}, want: &[6]string{allowed, noTags, noTags, noLaunch, atDoor, atDoor}},
	},
	"POST /v1/transfers":               {{body: "{}"}},
	"PATCH /v1/folders/{name}/members": {{body: `{"every":true}`}},
	"PUT /v1/alerts/rules/{id}":        {{args: []string{"gpu-hot"}, body: "{}"}},
	"POST /v1/alerts/mute":             {{body: "{}"}},
	"PUT /v1/alerts/pins/{rule}":       {{body: `{"pinned":true}`}},
	"PUT /v1/alerts/webhook":           {{body: `{"url":""}`}},
	"POST /v1/reservations":            {{body: `{"gpus":1,"from":"2099-01-01T00:00:00Z","seconds":60}`}},
}

// byWho is what each role gets of a call whose table says who may make it
// and the rule its refusals of the others name.
func byWho(who peerapi.Who, rule string) ([6]string, bool) {
	a, r := allowed, rule
	rows := map[peerapi.Who][4]string{
		peerapi.Members:        {a, a, a, a},
		peerapi.NonViewers:     {a, a, a, r},
		peerapi.Admins:         {a, a, r, r},
		peerapi.AdminsOrSharer: {a, a, r, r}, // the test's devices shared no folder of the node
		peerapi.MachineOwners:  {a, r, r, r}, // the test's devices are not the machine's own user
		peerapi.MachineUser:    {r, r, r, r},
		peerapi.GrantHolders:   {r, r, r, r},
	}
	if who == peerapi.Anyone {
		return [6]string{a, a, a, a, a, a}, true
	}
	row, ok := rows[who]
	return [6]string{row[0], row[1], row[2], row[3], atDoor, atDoor}, ok
}

// peerRoutesOf is a request on every call specs serve (a daemon's peer
// handler: telemetry, the replica's stream, joining, jobs, images, GPUs,
// tunnels, folders, copies, alerts), as routeAsks says, and what each role
// gets; an error for a call the matrix cannot ask, and for an ask of a
// call no table has.
func peerRoutesOf(specs []peerapi.Spec) ([]peerRoute, error) {
	var out []peerRoute
	var errs []error
	left := maps.Clone(routeAsks)
	for _, s := range specs {
		asks, ok := left[s.Pattern()]
		delete(left, s.Pattern())
		if !ok {
			asks = []routeAsk{{}}
		}
		for _, ask := range asks {
			args := ask.args
			if args == nil {
				for _, m := range regexp.MustCompile(`\{([^}]*)\}`).FindAllStringSubmatch(s.Path, -1) {
					args = append(args, wildcardExamples[m[1]])
				}
			}
			path, err := s.URL(args, ask.query)
			want, ok := byWho(s.Who, s.Rule)
			if ask.want != nil {
				want, ok = *ask.want, true
			}
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", s.Pattern(), err))
			case slices.Contains(args, ""):
				errs = append(errs, fmt.Errorf("%s: a wildcard without an example in wildcardExamples", s.Pattern()))
			case !ok:
				errs = append(errs, fmt.Errorf("%s: the matrix has no row for who may call it (%s)", s.Pattern(), s.Who))
			}
			out = append(out, peerRoute{s.Method, path, ask.body, want, ask.signed})
		}
	}
	for p := range left {
		errs = append(errs, fmt.Errorf("routeAsks asks %s, which no table serves", p))
	}
	return out, errors.Join(errs...)
}

// TestPeerRoutesOf: the matrix asks every call of the tables as their Who
// and Rule say; a Who it has no row for, a wildcard it has no example for,
// and an ask of a call no table serves fail it.
func TestPeerRoutesOf(t *testing.T) {
	tab := &peerapi.Table{}
	peerapi.Add[peerapi.None, peerapi.None](tab, "GET", "/v1/jobs/{id}/access", peerapi.Members, "")
	peerapi.Add[peerapi.None, peerapi.None](tab, "POST", "/v1/new/{id}", peerapi.Admins, "admins only")
	peerapi.Add[peerapi.None, peerapi.None](tab, "POST", "/v1/newer/{slot}", peerapi.Members, "")
	peerapi.Add[peerapi.None, peerapi.None](tab, "POST", "/v1/newest", peerapi.Who("the moon"), "no one")
	rts, err := peerRoutesOf(tab.Specs())
	for _, want := range []string{
		"POST /v1/newer/{slot}: a wildcard without an example",
		"POST /v1/newest: the matrix has no row for who may call it (the moon)",
		"routeAsks asks POST /v1/alerts/mute, which no table serves",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("peerRoutesOf = %v; want %q", err, want)
		}
	}
	if len(rts) != 4 || rts[0].path != "/v1/jobs/nojob/access" || rts[0].want != [6]string{allowed, allowed, allowed, allowed, atDoor, atDoor} ||
		rts[1].path != "/v1/new/nojob" || rts[1].want != [6]string{allowed, allowed, "admins only", "admins only", atDoor, atDoor} {
		t.Errorf("peerRoutesOf = %+v", rts)
	}
}

// perAddr is how many routes a device that is not a member asks from one
// address: fewer than its budget of refusals (10), and no more than the
// requests the door allows its connection (4).
const perAddr = 4

// TestRoleMatrix: every peer route of a real daemon, asked by a device of
// each role over real transports on loopback, through the daemon's own
// authorization (its peer handler, door and roles), is allowed or refused
// naming the rule, as the matrix says. A device that is not a member asks
// from a new address every perAddr routes, so that its budget of refusals
// does not answer for the rule (nor the strangers' handshake budget, each
// address holding one connection).
func TestRoleMatrix(t *testing.T) {
	ctx := t.Context()
	node := openServing(t, "node")
	addr := node.ep.Addr().String()
	code, err := node.members.Create(ctx, app.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	devices := map[string]*Daemon{}
	for _, role := range []string{"owner", "admin", "member", "viewer", "removed"} {
		d := openDaemon(t, role)
		invite := code.Code
		if role == "admin" || role == "viewer" {
			inv, err := node.members.CreateInvite(ctx, app.InviteRequest{Role: role, Uses: 1, ExpiresSeconds: 3600})
			if err != nil {
				t.Fatal(err)
			}
			invite = inv.Code
		}
		if _, err := d.members.Join(ctx, app.JoinRequest{Code: invite, Addr: addr}); err != nil {
			t.Fatalf("%s joins: %v", role, err)
		}
		devices[role] = d
	}
	if err := node.members.SetRole(ctx, devices["owner"].id.ID.String(), "owner"); err != nil {
		t.Fatal(err)
	}
	if err := node.members.Remove(ctx, devices["removed"].id.ID.String()); err != nil {
		t.Fatal(err)
	}
	stranger, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]*peer.Identity{"stranger": stranger}
	for role, d := range devices {
		ids[role] = d.id
	}

	peerRoutes, err := peerRoutesOf(node.peerAPI.(*agent.Served).Specs())
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]*http.Client{}
	for i, rt := range peerRoutes {
		for j, role := range matrixRoles {
			// A device that is not a member asks from a new address every
			// perAddr routes, within its budget of refusals there.
			key := fmt.Sprintf("127.0.%d.%d", 10+j, 1+i/perAddr)
			if d := devices[role]; d != nil && role != "removed" {
				key = role
			}
			client := clients[key]
			if client == nil {
				if key == role {
					client = devices[role].ep.Client(node.id.ID, []string{addr})
				} else {
					client = clientFrom(t, ids[role], key, node.id.ID, addr)
				}
				clients[key] = client
			}
			t.Run(fmt.Sprintf("%s %s by %s", rt.method, rt.path, role), func(t *testing.T) {
				var hdr http.Header
				if rt.signed {
					hdr = launchProof(t, ids[role], node.id.ID.String(), rt.body)
				}
				got := ask(t, client, rt, hdr)
				if want := rt.want[j]; got != want && (want == allowed || !strings.Contains(got, want)) {
					t.Errorf("%s %s by the %s: %s; want %s", rt.method, rt.path, role, orAllowed(got), orAllowed(want))
				}
			})
		}
	}
}

// launchProof is the header of id's proof that it asks node to run the
// spec of body, as the app signs a launch.
func launchProof(t *testing.T, id *peer.Identity, node, body string) http.Header {
	t.Helper()
	spec, err := jobs.DecodeSpec(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	proof, err := app.DeviceSigner{ID: id}.ProveLaunch(node, spec)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{jobs.ProofHeader: {proof}}
}

func orAllowed(s string) string {
	if s == allowed {
		return "allowed"
	}
	return "refused: " + s
}

// ask sends rt's request and returns the refusal it got ("code: message"),
// or allowed when the answer is anything else than 401, 403 or 429.
func ask(t *testing.T, c *http.Client, rt peerRoute, hdr http.Header) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, rt.method, "https://peer"+rt.path, strings.NewReader(rt.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", rt.method, rt.path, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
		b := httperr.Read(resp)
		return fmt.Sprintf("%s: %s", b.Code, b.Message)
	}
	return allowed
}

// clientFrom is a pinned client to the device want at addr from a new
// endpoint speaking as id on the loopback address ip.
func clientFrom(t *testing.T, id *peer.Identity, ip string, want peer.ID, addr string) *http.Client {
	t.Helper()
	cfg := transport.DefaultConfig()
	cfg.Listen, cfg.QUICOnly = ip+":0", true
	ep, err := transport.New(id, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep.Client(want, []string{addr})
}

// openDaemon opens a daemon named name on loopback, not yet serving.
func openDaemon(t testing.TB, name string) *Daemon {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Listen, cfg.Name, cfg.QUICOnly = t.TempDir(), "127.0.0.1:0", name, true
	d, err := open(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	return d
}

// openServing opens a daemon that serves its peer handler until the test
// ends.
func openServing(t testing.TB, name string) *Daemon {
	t.Helper()
	d := openDaemon(t, name)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.ep.Serve(ctx, d.peerAPI); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return d
}
