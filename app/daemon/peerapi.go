package daemon

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/labpool/labpool/app/alerting"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// peerHandler is what members (and, for joining only, strangers) reach:
// each request is checked against the role of the device the transport
// proved.
func peerHandler(db *store.DB, ep *transport.Endpoint, pm *pool.Manager, members *membership, peers *replica.Peers,
	tel *agent.Telemetry, jm *jobs.Manager, ex *executor, reg *folders.Registry, cps *copies.Receiver, al *alerting.Alerting,
	log *slog.Logger) http.Handler {
	rs := replica.NewServer(db, members.self.String(), log)
	rs.Pool = pm.Records
	rs.Addrs = peers.Relay
	rs.Skip = history.SkipOnCatchUp
	jobCaller := func(r *http.Request) jobs.Caller {
		id, _ := transport.PeerID(r)
		role, _ := pm.Role(id)
		return jobs.Caller{ID: id.String(), Role: string(role)}
	}
	return agent.PeerHandler(agent.Parts{
		Telemetry: tel,
		Stream:    agent.Route{Method: http.MethodGet, Path: replica.StreamPath, Handler: heard(peers, hintFollower(members.self, peers, rs))},
		Join:      agent.Route{Method: http.MethodPost, Path: pool.JoinPath, Handler: transport.RateLimited(ep.Refusals(), pm.JoinHandler())},
		Jobs:      jobs.Handler(jm, jobCaller),
		Images:    containers.ImageHandler(ex.rt, jm, jobCaller),
		Folders:   folders.Handler(reg, folders.Access{Caller: members.folderCaller, Role: members.folderRole}),
		Transfers: cps.Handler(members.folderCaller),
		Alerts:    alerts.Handler(al.Machine(), al.Caller),
		Authorize: func(open []string, h http.Handler) http.Handler {
			return tellRemoved(members, ep, transport.AuthorizeLimited(ep.Refusals(), members.isMember, open, h))
		},
	})
}

// heard tells the followers that the member opening a replication stream
// reaches this machine: the follower of it, if offline, dials at once.
func heard(peers *replica.Peers, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := transport.PeerID(r); ok {
			peers.Heard(id.String())
		}
		h.ServeHTTP(w, r)
	})
}

// hintFollower hints, before h serves a member's replication stream, the
// address the member's session came from: its handshake proved the member
// there, and a member that joined through this machine without mDNS is
// reached that way (its records, then its addresses, are relayed from here).
func hintFollower(self peer.ID, peers *replica.Peers, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := transport.PeerID(r); ok && id != self {
			peers.Hint(id.String(), r.RemoteAddr)
		}
		h.ServeHTTP(w, r)
	})
}

// tellRemoved answers a removed device's stream request with the proof
// that it was removed (replica.Told), so that it stops calling; its other
// requests, and everyone else's, go to h. The answer is a refusal charged to
// the device's address like the others, and it is given while the
// address's budget lasts.
func tellRemoved(members *membership, ep *transport.Endpoint, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := transport.PeerID(r)
		if !ok || r.URL.Path != replica.StreamPath || members.isMember(id) {
			h.ServeHTTP(w, r)
			return
		}
		rm, removed := members.pm.RemovalOf(id.String())
		src := netip.Addr{}
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			src = ap.Addr().Unmap()
		}
		l := ep.Refusals()
		if !removed || l.Exhausted(src) {
			h.ServeHTTP(w, r)
			return
		}
		l.Charge(src)
		recs, _ := members.pm.Records()
		replica.WriteRemoved(w, fmt.Sprintf("this device was removed from the pool by %s at %s",
			members.nameOf(rm.By), rm.At.UTC().Format(time.RFC3339)), recs)
	})
}

// folderCaller is the device that TLS proved for r, with its role; a
// copy's reads are checked against the member who asked for the copy (its
// grant).
func (p *membership) folderCaller(r *http.Request) folders.Caller {
	id, _ := transport.PeerID(r)
	return folders.Caller{ID: id.String(), Role: p.roleOf(id)}
}

// folderRole is the role of the device id (text form), "" for none.
func (p *membership) folderRole(id string) string {
	pid, err := peer.ParseID(id)
	if err != nil {
		return ""
	}
	return p.roleOf(pid)
}
