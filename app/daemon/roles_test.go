package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/jobs"
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
	noLaunch    = "viewers cannot launch jobs"
	noTags      = "only the machine's owner replaces image tags"
	noClear     = "only the pool's owners and this machine's user clear a quarantine"
	noGrant     = "a copy needs a valid grant"
	noConfigure = "alerts: owners and admins only"
	noMute      = "viewers cannot mute alerts"
	noHolder    = "the webhook URL goes to owners' and admins' devices only"
	noProof     = "owner proof: none" // a launch must carry its owner's signature
)

// peerRoute is one request on a path that the agent serves to peers, and
// what each role gets: allowed, or refused naming the rule.
type peerRoute struct {
	method, path, body string
	want               [6]string // by matrixRoles
	signed             bool      // a launch that carries the asking device's proof (jobs.ProofHeader)
}

// membersOnly is a route every member reaches, and no one else.
func membersOnly(method, path, body string) peerRoute {
	return peerRoute{method, path, body, [6]string{allowed, allowed, allowed, allowed, atDoor, atDoor}, false}
}

// peerRoutes is every path the agent serves to peers (node/agent's
// PeerHandler: telemetry, the replica's stream, joining, jobs, images,
// GPUs, tunnels, folders, copies, alerts), with a request on each.
var peerRoutes = []peerRoute{
	membersOnly("GET", "/v1/node/info", ""),
	membersOnly("GET", "/v1/node/sample", ""),
	// A removed device is told so on the stream, with the proof (sync/replica's Told).
	{"GET", "/v1/replica/stream", "", [6]string{allowed, allowed, allowed, allowed, toldRemoved, notMember}, false},
	// Open to all: a malformed join reaches the join handler, which
	// answers 400 to anyone (TestTrust refuses a removed device's real join).
	{"POST", "/v1/pool/join", "{}", [6]string{allowed, allowed, allowed, allowed, allowed, allowed}, false},
	membersOnly("GET", "/v1/jobs", ""),
	{"POST", "/v1/jobs", `{"image":"registry.example:5000/busybox:1"}`, [6]string{allowed, allowed, allowed, noLaunch, atDoor, atDoor}, true},
	// A launch without its owner's proof is refused to every peer.
	{"POST", "/v1/jobs", `{"image":"registry.example:5000/busybox:2"}`, [6]string{noProof, noProof, noProof, noLaunch, atDoor, atDoor}, false},
	membersOnly("GET", "/v1/jobs/nojob", ""),
	membersOnly("POST", "/v1/jobs/nojob/stop", ""),
	membersOnly("DELETE", "/v1/jobs/nojob", ""),
	membersOnly("GET", "/v1/jobs/nojob/logs", ""),
	membersOnly("GET", "/v1/jobs/nojob/stats", ""),
	membersOnly("POST", "/v1/jobs/nojob/tunnel?port=8080", ""),
	membersOnly("GET", "/v1/jobs/nojob/access", ""),
	membersOnly("GET", "/v1/images", ""),
	{"POST", "/v1/images/load", "", [6]string{allowed, allowed, allowed, noLaunch, atDoor, atDoor}, false},
	{"POST", "/v1/images/pull?ref=registry.example:5000/busybox:1", "", [6]string{allowed, allowed, allowed, noLaunch, atDoor, atDoor}, false},
	{"POST", "/v1/images/pull?ref=registry.example:5000/busybox:1&force=1", "", [6]string{allowed, noTags, noTags, noLaunch, atDoor, atDoor}, false},
	{"POST", "/v1/gpus/0/clear", "", [6]string{allowed, noClear, noClear, noClear, atDoor, atDoor}, false},
	membersOnly("GET", "/v1/folders", ""),
	membersOnly("GET", "/v1/folders/data/ls", ""),
	{"GET", "/v1/folders/data/walk", "", [6]string{noGrant, noGrant, noGrant, noGrant, atDoor, atDoor}, false},
	{"GET", "/v1/folders/data/sums", "", [6]string{noGrant, noGrant, noGrant, noGrant, atDoor, atDoor}, false},
	{"GET", "/v1/folders/data/read", "", [6]string{noGrant, noGrant, noGrant, noGrant, atDoor, atDoor}, false},
	{"GET", "/v1/folders/data/blocks", "", [6]string{noGrant, noGrant, noGrant, noGrant, atDoor, atDoor}, false},
	{"POST", "/v1/folders/data/bundle", "", [6]string{noGrant, noGrant, noGrant, noGrant, atDoor, atDoor}, false},
	{"POST", "/v1/transfers", "{}", [6]string{noGrant, noGrant, noGrant, noGrant, atDoor, atDoor}, false},
	membersOnly("GET", "/v1/transfers/nocopy", ""),
	membersOnly("GET", "/v1/alerts/rules", ""),
	membersOnly("GET", "/v1/alerts/state", ""),
	{"PUT", "/v1/alerts/rules/gpu-hot", "{}", [6]string{allowed, allowed, noConfigure, noConfigure, atDoor, atDoor}, false},
	{"POST", "/v1/alerts/mute", "{}", [6]string{allowed, allowed, allowed, noMute, atDoor, atDoor}, false},
	{"GET", "/v1/alerts/webhook", "", [6]string{allowed, allowed, noHolder, noHolder, atDoor, atDoor}, false},
	{"PUT", "/v1/alerts/webhook", `{"url":""}`, [6]string{allowed, allowed, noConfigure, noConfigure, atDoor, atDoor}, false},
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
	code, err := node.members.Create(ctx)
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
func openDaemon(t *testing.T, name string) *Daemon {
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
func openServing(t *testing.T, name string) *Daemon {
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
