// Package membership is the pool as this machine's local API and peer API
// see it: it implements app.PoolManager over sync/pool's Manager, says who
// is a member, with what role and name, and tells a removed device that it
// was removed.
package membership

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/transport"
)

// Membership is this machine's pool.
type Membership struct {
	self peer.ID
	pm   *pool.Manager
	live Liveness
	ep   Dialer
}

// Liveness says which members this machine holds a live session with
// (*replica.Peers).
type Liveness interface{ Online(id string) bool }

// Dialer reaches a machine by address alone, to probe it
// (*transport.Endpoint).
type Dialer interface {
	DialAny(ctx context.Context, addr string) (*transport.Conn, error)
}

var _ Dialer = (*transport.Endpoint)(nil)

// New returns self's view of the pool pm: live says who is online, probes
// dial through ep.
func New(self peer.ID, pm *pool.Manager, live Liveness, ep Dialer) *Membership {
	return &Membership{self: self, pm: pm, live: live, ep: ep}
}

// Pool returns the pool's manager.
func (p *Membership) Pool() *pool.Manager { return p.pm }

// Status implements app.PoolManager.
func (p *Membership) Status(ctx context.Context) (app.PoolStatus, error) {
	ps := app.PoolStatus{Members: []app.Member{}, People: []app.Person{}, Invites: []app.Invite{}, SelfID: p.self.String(), Can: app.CanFor("")}
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
			PersonID: m.Person, PersonName: m.PersonName,
		})
		if m.ID == self && !m.Removed {
			ps.SelfRole = string(m.Role)
		}
	}
	ps.People = app.PeopleOf(ps.Members)
	ps.Can = app.CanFor(ps.SelfRole)
	if ps.SelfRole == "" {
		ps.Can = app.Can{Why: "This machine was removed from the pool."}
		if r, ok := p.pm.RemovalOf(self); ok {
			ps.Removed = &app.Removal{By: r.By, ByName: p.NameOf(r.By), At: r.At}
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
func (p *Membership) Create(ctx context.Context, req app.CreateRequest) (app.JoinCode, error) {
	inv, code, err := p.pm.Create(ctx, asName(req.As))
	if err != nil {
		return app.JoinCode{}, poolError(err)
	}
	return app.JoinCode{PoolID: code.PoolID(), Invite: appInvite(inv, time.Now()), Code: code.String(), Person: p.personName(inv.CreatedBy)}, nil
}

// Join implements app.PoolManager.
func (p *Membership) Join(ctx context.Context, req app.JoinRequest) (app.PoolStatus, error) {
	code, err := pool.ParseCode(strings.TrimSpace(req.Code))
	if err != nil {
		return app.PoolStatus{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	if err := p.pm.Join(ctx, code, req.Addr, asName(req.As)); err != nil {
		return app.PoolStatus{}, poolError(err)
	}
	return p.Status(ctx)
}

// AddDevice implements app.PoolManager: a code for one device of a person,
// within pool.AddDeviceTTL.
func (p *Membership) AddDevice(ctx context.Context, req app.AddDeviceRequest) (app.DeviceCode, error) {
	inv, code, err := p.pm.AddDevice(ctx, strings.TrimSpace(req.For), 0)
	if err != nil {
		return app.DeviceCode{}, poolError(err)
	}
	return app.DeviceCode{Invite: appInvite(inv, time.Now()), Code: code.String(), Person: p.personName(inv.Person)}, nil
}

// Merge implements app.PoolManager.
func (p *Membership) Merge(ctx context.Context, req app.MergeRequest) error {
	return poolError(p.pm.Merge(ctx, req.Who, req.Into))
}

// CreateInvite implements app.PoolManager.
func (p *Membership) CreateInvite(ctx context.Context, req app.InviteRequest) (app.NewInvite, error) {
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
func (p *Membership) RevokeInvite(ctx context.Context, id string) error {
	return poolError(p.pm.Revoke(ctx, id))
}

// SetRole implements app.PoolManager.
func (p *Membership) SetRole(ctx context.Context, id, role string) error {
	r, err := pool.ParseRole(role)
	if err != nil {
		return fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	return poolError(p.pm.SetRole(ctx, id, r))
}

// Remove implements app.PoolManager.
func (p *Membership) Remove(ctx context.Context, who string) error {
	return poolError(p.pm.Remove(ctx, who))
}

// Readmit implements app.PoolManager.
func (p *Membership) Readmit(ctx context.Context, who string) error {
	return poolError(p.pm.Readmit(ctx, who))
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
		errors.Is(err, pool.ErrOtherPool), errors.Is(err, pool.ErrBadMessage), errors.Is(err, pool.ErrMalformed),
		errors.Is(err, pool.ErrReplayed): // a change made already (a merge of one person into themselves)
		return fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	return err
}

// Probe implements app.PoolManager.
func (p *Membership) Probe(ctx context.Context, addr string) (app.ProbeResult, error) {
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

// RoleOf is who may do what on self's node: its own calls act with the
// machine's authority (owner); members with their role in the pool; ""
// for anyone else.
func RoleOf(self peer.ID, pm *pool.Manager, id peer.ID) string {
	if id == self {
		return string(pool.RoleOwner)
	}
	r, _ := pm.Role(id)
	return string(r)
}

// RoleOf is RoleOf for this machine's pool.
func (p *Membership) RoleOf(id peer.ID) string { return RoleOf(p.self, p.pm, id) }

// IsMember reports whether id may use this node: a current member of our pool.
func (p *Membership) IsMember(id peer.ID) bool { return p.RoleOf(id) != "" }

// MemberName is a member's name in the pool, "" when it is not one.
func (p *Membership) MemberName(id string) string {
	ms, _ := p.pm.Member(id)
	return ms.Name
}

// NameOf is a member's name in the pool's log, or its short ID.
func (p *Membership) NameOf(id string) string {
	if name := p.MemberName(id); name != "" {
		return name
	}
	if pid, err := peer.ParseID(id); err == nil {
		return pid.Short()
	}
	return id
}

// TellRemoved answers a removed device's stream request with the proof
// that it was removed (replica.Told), so that it stops calling; its other
// requests, and everyone else's, go to h. The answer is a refusal charged to
// the device's address like the others, and it is given while the
// address's budget lasts.
func (p *Membership) TellRemoved(refusals *transport.Limiter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := transport.PeerID(r)
		if !ok || r.URL.Path != replica.StreamPath || p.IsMember(id) {
			h.ServeHTTP(w, r)
			return
		}
		rm, removed := p.pm.RemovalOf(id.String())
		src := netip.Addr{}
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			src = ap.Addr().Unmap()
		}
		l := refusals
		if !removed || l.Exhausted(src) {
			h.ServeHTTP(w, r)
			return
		}
		l.Charge(src)
		recs, _ := p.pm.Records()
		replica.WriteRemoved(w, fmt.Sprintf("this device was removed from the pool by %s at %s",
			p.NameOf(rm.By), rm.At.UTC().Format(time.RFC3339)), recs)
	})
}

// FolderCaller is the device that TLS proved for r, with its role; a
// copy's reads are checked against the member who asked for the copy (its
// grant).
func (p *Membership) FolderCaller(r *http.Request) folders.Caller {
	id, _ := transport.PeerID(r)
	return folders.Caller{ID: id.String(), Role: p.RoleOf(id)}
}

// FolderRole is the role of the device id (text form), "" for none.
func (p *Membership) FolderRole(id string) string {
	pid, err := peer.ParseID(id)
	if err != nil {
		return ""
	}
	return p.RoleOf(pid)
}
