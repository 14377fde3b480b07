package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
)

// poolManager implements app.PoolManager over the daemon's sync/pool.Manager.
type poolManager Daemon

func (p *poolManager) d() *Daemon { return (*Daemon)(p) }

// Status implements app.PoolManager.
func (p *poolManager) Status(ctx context.Context) (app.PoolStatus, error) {
	d := p.d()
	ps := app.PoolStatus{Members: []app.Member{}, Invites: []app.Invite{}, SelfID: d.id.ID.String(), Can: app.CanFor("")}
	st, ok := d.pool.Snapshot()
	if !ok {
		return ps, nil
	}
	ps.PoolID = st.Pool.String()
	self := d.id.ID.String()
	for _, m := range st.Members {
		ps.Members = append(ps.Members, app.Member{
			ID: m.ID, Name: m.Name, Role: string(m.Role), AddedAt: m.AddedAt, AddedBy: m.AddedBy, Removed: m.Removed,
			Online: !m.Removed && (m.ID == self || d.peers.Online(m.ID)), Self: m.ID == self, Creator: m.ID == st.Creator,
		})
		if m.ID == self && !m.Removed {
			ps.SelfRole = string(m.Role)
		}
	}
	ps.Can = app.CanFor(ps.SelfRole)
	if ps.SelfRole == "" {
		ps.Can = app.Can{Why: "This machine was removed from the pool."}
		if r, ok := d.pool.RemovalOf(self); ok {
			ps.Removed = &app.Removal{By: r.By, ByName: d.nameOf(r.By), At: r.At}
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
func (p *poolManager) Create(ctx context.Context) (app.JoinCode, error) {
	inv, code, err := p.d().pool.Create(ctx)
	if err != nil {
		return app.JoinCode{}, poolError(err)
	}
	return app.JoinCode{PoolID: code.PoolID(), Invite: appInvite(inv, time.Now()), Code: code.String()}, nil
}

// Join implements app.PoolManager.
func (p *poolManager) Join(ctx context.Context, req app.JoinRequest) (app.PoolStatus, error) {
	code, err := pool.ParseCode(strings.TrimSpace(req.Code))
	if err != nil {
		return app.PoolStatus{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	if err := p.d().pool.Join(ctx, code, req.Addr); err != nil {
		return app.PoolStatus{}, poolError(err)
	}
	return p.Status(ctx)
}

// CreateInvite implements app.PoolManager.
func (p *poolManager) CreateInvite(ctx context.Context, req app.InviteRequest) (app.NewInvite, error) {
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
	inv, code, err := p.d().pool.Invite(ctx, role, req.Uses, time.Duration(req.ExpiresSeconds)*time.Second)
	if err != nil {
		return app.NewInvite{}, poolError(err)
	}
	return app.NewInvite{Invite: appInvite(inv, time.Now()), Code: code.String()}, nil
}

// RevokeInvite implements app.PoolManager.
func (p *poolManager) RevokeInvite(ctx context.Context, id string) error {
	return poolError(p.d().pool.Revoke(ctx, id))
}

// SetRole implements app.PoolManager.
func (p *poolManager) SetRole(ctx context.Context, id, role string) error {
	r, err := pool.ParseRole(role)
	if err != nil {
		return fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	return poolError(p.d().pool.SetRole(ctx, id, r))
}

// Remove implements app.PoolManager.
func (p *poolManager) Remove(ctx context.Context, who string) error {
	return poolError(p.d().pool.Remove(ctx, who))
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
func (p *poolManager) Probe(ctx context.Context, addr string) (app.ProbeResult, error) {
	d := p.d()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := d.ep.DialAny(ctx, addr)
	if err != nil {
		return app.ProbeResult{}, fmt.Errorf("reach %s: %w", addr, err)
	}
	defer conn.Close()
	res := app.ProbeResult{Addr: addr, ID: conn.PeerID().String()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer"+agent.InfoRoute.Path, nil)
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

// openPool loads the pool manager; the daemon's announcer, replica and
// removal effects are wired through its callbacks.
func (d *Daemon) openPool(ctx context.Context) error {
	var err error
	d.pool, err = pool.NewManager(ctx, pool.ManagerConfig{
		Identity:   d.id,
		Name:       func() string { return d.name },
		DB:         d.db,
		Dial:       d.ep.DialAny,
		Candidates: d.poolCandidates,
		Entered: func(poolID string) error {
			if d.ann == nil {
				return nil // announced with the pool ID when discovery starts
			}
			return d.ann.SetTXT(d.txt(poolID))
		},
		Hint:    func(id, addr string) { d.peers.Hint(id, addr) },
		Removed: d.removed,
		Log:     d.log,
	})
	return err
}

// roleOf is who may do what on this node: its own calls act with the
// machine's authority (owner); members with their role in the pool.
func (d *Daemon) roleOf(id peer.ID) (string, bool) {
	if id == d.id.ID {
		return string(pool.RoleOwner), true
	}
	r, ok := d.pool.Role(id)
	return string(r), ok
}

// isMember reports whether id may use this node: a current member of our pool.
func (d *Daemon) isMember(id peer.ID) bool {
	_, ok := d.roleOf(id)
	return ok
}
