package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// membership is the pool as this machine's local API and peer API see
// it: it implements app.PoolManager over sync/pool's Manager, and says
// who is a member, with what role and name.
type membership struct {
	self peer.ID
	pm   *pool.Manager
	live *replica.Peers
	ep   *transport.Endpoint // probes reach machines through it
}

func newMembership(self peer.ID, pm *pool.Manager, live *replica.Peers, ep *transport.Endpoint) *membership {
	return &membership{self: self, pm: pm, live: live, ep: ep}
}

// Status implements app.PoolManager.
func (p *membership) Status(ctx context.Context) (app.PoolStatus, error) {
	ps := app.PoolStatus{Members: []app.Member{}, Invites: []app.Invite{}, SelfID: p.self.String(), Can: app.CanFor("")}
	st, ok := p.pm.Snapshot()
	if !ok {
		return ps, nil
	}
	ps.PoolID = st.Pool.String()
	self := p.self.String()
	for _, m := range st.Members {
		ps.Members = append(ps.Members, app.Member{
			ID: m.ID, Name: m.Name, Role: string(m.Role), AddedAt: m.AddedAt, AddedBy: m.AddedBy, Removed: m.Removed,
			Online: !m.Removed && (m.ID == self || p.live.Online(m.ID)), Self: m.ID == self, Creator: m.ID == st.Creator,
		})
		if m.ID == self && !m.Removed {
			ps.SelfRole = string(m.Role)
		}
	}
	ps.Can = app.CanFor(ps.SelfRole)
	if ps.SelfRole == "" {
		ps.Can = app.Can{Why: "This machine was removed from the pool."}
		if r, ok := p.pm.RemovalOf(self); ok {
			ps.Removed = &app.Removal{By: r.By, ByName: p.nameOf(r.By), At: r.At}
			ps.Can.Why = fmt.Sprintf("This machine was removed from the pool by %s at %s.", ps.Removed.ByName, r.At.Local().Format(time.DateTime))
		}
	}
	if ps.Can.ManageMembers {
		now := time.Now()
		for _, inv := range st.Invites {
			ps.Invites = append(ps.Invites, appInvite(inv, now))
		}
	}
	return ps, nil
}

func appInvite(inv pool.InviteState, now time.Time) app.Invite {
	left := -1
	if inv.Uses > 0 {
		left = max(inv.Uses-inv.Used, 0)
	}
	return app.Invite{
		ID: inv.ID, Role: string(inv.Role), Uses: inv.Uses, Used: inv.Used, UsesLeft: left, Expires: inv.Expires,
		CreatedBy: inv.CreatedBy, CreatedAt: inv.CreatedAt, State: inv.State(now),
	}
}

// Create implements app.PoolManager: a new pool and its first invite.
func (p *membership) Create(ctx context.Context) (app.JoinCode, error) {
	inv, code, err := p.pm.Create(ctx)
	if err != nil {
		return app.JoinCode{}, poolError(err)
	}
	return app.JoinCode{PoolID: code.PoolID(), Invite: appInvite(inv, time.Now()), Code: code.String()}, nil
}

// Join implements app.PoolManager.
func (p *membership) Join(ctx context.Context, req app.JoinRequest) (app.PoolStatus, error) {
	code, err := pool.ParseCode(strings.TrimSpace(req.Code))
	if err != nil {
		return app.PoolStatus{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	if err := p.pm.Join(ctx, code, req.Addr); err != nil {
		return app.PoolStatus{}, poolError(err)
	}
	return p.Status(ctx)
}

// CreateInvite implements app.PoolManager.
func (p *membership) CreateInvite(ctx context.Context, req app.InviteRequest) (app.NewInvite, error) {
	role := pool.RoleMember
	if req.Role != "" {
		r, err := pool.ParseRole(req.Role)
		if err != nil {
			return app.NewInvite{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
		}
		role = r
	}
	if req.Uses < 0 || req.ExpiresSeconds < 0 {
		return app.NewInvite{}, fmt.Errorf("%w: uses and expiry must not be negative", app.ErrInvalid)
	}
	inv, code, err := p.pm.Invite(ctx, role, req.Uses, time.Duration(req.ExpiresSeconds)*time.Second)
	if err != nil {
		return app.NewInvite{}, poolError(err)
	}
	return app.NewInvite{Invite: appInvite(inv, time.Now()), Code: code.String()}, nil
}

// RevokeInvite implements app.PoolManager.
func (p *membership) RevokeInvite(ctx context.Context, id string) error {
	return poolError(p.pm.Revoke(ctx, id))
}

// SetRole implements app.PoolManager.
func (p *membership) SetRole(ctx context.Context, id, role string) error {
	r, err := pool.ParseRole(role)
	if err != nil {
		return fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	return poolError(p.pm.SetRole(ctx, id, r))
}

// Remove implements app.PoolManager.
func (p *membership) Remove(ctx context.Context, who string) error {
	return poolError(p.pm.Remove(ctx, who))
}

// poolError turns the pool's refusals into the local API's errors; the
// message names the rule.
func poolError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pool.ErrWrongCode):
		return &app.APIError{Status: http.StatusForbidden, Code: "wrong_code",
			Message: "every member that answered refused the join code: check it was typed as printed by `labpool pool invite` or `pool create`"}
	case errors.Is(err, pool.ErrRemoved):
		return &app.APIError{Status: http.StatusForbidden, Code: "removed", Message: err.Error()}
	case errors.Is(err, pool.ErrInvite):
		return &app.APIError{Status: http.StatusForbidden, Code: "invite_ended", Message: err.Error()}
	case errors.Is(err, pool.ErrOutOfRole):
		return &app.APIError{Status: http.StatusForbidden, Code: "forbidden", Message: err.Error()}
	case errors.Is(err, pool.ErrNotFound):
		return &app.APIError{Status: http.StatusNotFound, Code: "pool_not_found", Message: err.Error()}
	case errors.Is(err, pool.ErrNoMember), errors.Is(err, pool.ErrNoInvite):
		return fmt.Errorf("%w: %v", app.ErrNotFound, err)
	case errors.Is(err, pool.ErrNotInPool):
		return fmt.Errorf("%w: this machine is not in a pool: run `labpool pool create` or `labpool pool join CODE`", app.ErrInvalid)
	case errors.Is(err, pool.ErrAmbiguous), errors.Is(err, pool.ErrInPool), errors.Is(err, pool.ErrBadRole),
		errors.Is(err, pool.ErrOtherPool):
		return fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	return err
}

// Probe implements app.PoolManager.
func (p *membership) Probe(ctx context.Context, addr string) (app.ProbeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := p.ep.DialAny(ctx, addr)
	if err != nil {
		return app.ProbeResult{}, fmt.Errorf("reach %s: %w", addr, err)
	}
	defer conn.Close()
	res := app.ProbeResult{Addr: addr, ID: conn.PeerID().String()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer/v1/node/info", nil)
	if err != nil {
		return res, err
	}
	resp, err := conn.Client().Do(req)
	if err != nil {
		return res, fmt.Errorf("ask %s for node info: %w", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	res.Status = resp.StatusCode
	res.Member = resp.StatusCode == http.StatusOK
	if res.Member {
		res.Message = "serves this machine as a pool member"
	} else {
		res.Message = fmt.Sprintf("refuses this machine: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return res, nil
}

// openPool loads the pool manager: it dials through ep, joins through the
// candidates discovery heard, announces the pool it enters, hints the
// member it joined through to the followers, and tells removed of each
// device removed.
func openPool(ctx context.Context, id *peer.Identity, name string, db *store.DB, ep *transport.Endpoint,
	disc *discoveryPart, peers *replica.Peers, removed func(peer.ID), log *slog.Logger) (*pool.Manager, error) {
	return pool.NewManager(ctx, pool.ManagerConfig{
		Identity:   id,
		Name:       func() string { return name },
		DB:         db,
		Dial:       ep.DialAny,
		Candidates: disc.poolCandidates,
		Entered:    disc.entered,
		Hint:       func(id, addr string) { peers.Hint(id, addr) },
		Removed:    removed,
		Log:        log,
	})
}

// roleOf is who may do what on this node: its own calls act with the
// machine's authority (owner); members with their role in the pool; ""
// for anyone else.
func roleOf(self peer.ID, pm *pool.Manager, id peer.ID) string {
	if id == self {
		return string(pool.RoleOwner)
	}
	r, _ := pm.Role(id)
	return string(r)
}

// roleOf is roleOf for this machine's pool.
func (p *membership) roleOf(id peer.ID) string { return roleOf(p.self, p.pm, id) }

// isMember reports whether id may use this node: a current member of our pool.
func (p *membership) isMember(id peer.ID) bool { return p.roleOf(id) != "" }

// memberName is a member's name in the pool, "" when it is not one.
func (p *membership) memberName(id string) string {
	st, _ := p.pm.Snapshot()
	return st.MemberName(id)
}

// nameOf is a member's name in the pool's log, or its short ID.
func (p *membership) nameOf(id string) string {
	if name := p.memberName(id); name != "" {
		return name
	}
	if pid, err := peer.ParseID(id); err == nil {
		return pid.Short()
	}
	return id
}
