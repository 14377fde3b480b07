package daemon

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/alerting"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/app/membership"
	"github.com/labpool/labpool/app/sharing"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// peerServer serves the peer API on the endpoint until ctx is cancelled.
type peerServer struct {
	ep *transport.Endpoint
	h  http.Handler
}

func (p peerServer) Run(ctx context.Context) error { return p.ep.Serve(ctx, p.h) }

// peerHandler is what members (and, for joining only, strangers) reach:
// each request is checked against the role of the device the transport
// proved.
func peerHandler(db *store.DB, ep *transport.Endpoint, pm *pool.Manager, members *membership.Membership, peers *replica.Peers,
	tel *agent.Telemetry, jm *jobs.Manager, ex *agent.Executor, reg *folders.Registry, shares *sharing.Publisher, cps *copies.Receiver, al *alerting.Alerting,
	book *reserve.Book, log *slog.Logger) http.Handler {
	rs := replica.NewServer(db, ep.ID().String(), log)
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
		Stream:    agent.Route{Method: http.MethodGet, Path: replica.StreamPath, Handler: heard(peers, hintFollower(ep.ID(), peers, rs))},
		Join:      agent.Route{Method: http.MethodPost, Path: pool.JoinPath, Handler: transport.RateLimited(ep.Refusals(), pm.JoinHandler())},
		Jobs:      jobs.Handler(jm, jobCaller),
		Images:    containers.ImageHandler(ex.Runtime, jm, jobCaller),
		Folders:   folders.Handler(reg, folders.Access{Caller: members.FolderCaller, Role: members.FolderRole, Changed: shares.Changed}),
		Transfers: cps.Handler(members.FolderCaller),
		Alerts:    alerts.Handler(al.Machine(), al.Caller),
		Reserve:   reserve.Handler(book, app.ReserveCaller(pm)),
		Authorize: func(open []string, h http.Handler) http.Handler {
			return members.TellRemoved(ep.Refusals(), transport.AuthorizeLimited(ep.Refusals(), members.IsMember, open, h))
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
