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
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// poolManager implements app.PoolManager on the daemon.
type poolManager Daemon

// joinWait bounds how long a join looks for the pool by mDNS.
const joinWait = 10 * time.Second

func (p *poolManager) d() *Daemon { return (*Daemon)(p) }

// current returns the pool's code, or ok false when not in a pool.
func (p *poolManager) current(ctx context.Context) (pool.Code, bool, error) {
	d := p.d()
	secret, ok, err := d.db.Setting(ctx, app.SettingPoolSecret)
	if err != nil || !ok {
		return pool.Code{}, false, err
	}
	c, err := pool.ParseCode(secret)
	if err != nil {
		return pool.Code{}, false, fmt.Errorf("stored pool secret: %w", err)
	}
	return c, true, nil
}

// Status implements app.PoolManager.
func (p *poolManager) Status(ctx context.Context) (app.PoolStatus, error) {
	ps := app.PoolStatus{Members: []app.Member{}}
	c, ok, err := p.current(ctx)
	if err != nil || !ok {
		return ps, err
	}
	ps.PoolID = c.PoolID()
	rows, err := p.d().db.Members(ctx)
	if err != nil {
		return ps, err
	}
	for _, m := range rows {
		ps.Members = append(ps.Members, app.Member{ID: m.ID, Name: m.Name, AddedAt: m.AddedAt, Removed: m.Removed})
	}
	return ps, nil
}

// Create implements app.PoolManager; in a pool already, it returns that
// pool's code again.
func (p *poolManager) Create(ctx context.Context) (app.JoinCode, error) {
	d := p.d()
	c, ok, err := p.current(ctx)
	if err != nil {
		return app.JoinCode{}, err
	}
	if !ok {
		if c, err = pool.NewCode(); err != nil {
			return app.JoinCode{}, err
		}
		if err := p.enter(ctx, c); err != nil {
			return app.JoinCode{}, err
		}
		self := store.MemberRow{ID: d.id.ID.String(), Name: d.name, Version: 1, AddedAt: time.Now().UTC(), AddedBy: d.id.ID.String()}
		if _, err := d.db.PutMember(ctx, self); err != nil {
			return app.JoinCode{}, err
		}
		d.log.Info("created pool", "pool", c.PoolID())
	}
	return app.JoinCode{PoolID: c.PoolID(), Code: c.String()}, nil
}

// enter records the pool and announces membership of it.
func (p *poolManager) enter(ctx context.Context, c pool.Code) error {
	d := p.d()
	if err := d.db.SetSetting(ctx, app.SettingPoolSecret, c.String()); err != nil {
		return err
	}
	if err := d.db.SetSetting(ctx, app.SettingPoolID, c.PoolID()); err != nil {
		return err
	}
	return d.ann.SetTXT(d.txt(c.PoolID()))
}

// Join implements app.PoolManager.
func (p *poolManager) Join(ctx context.Context, req app.JoinRequest) (app.PoolStatus, error) {
	code, err := pool.ParseCode(strings.TrimSpace(req.Code))
	if err != nil {
		return app.PoolStatus{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	if cur, ok, err := p.current(ctx); err != nil {
		return app.PoolStatus{}, err
	} else if ok && cur.PoolID() != code.PoolID() {
		return app.PoolStatus{}, fmt.Errorf("%w: this machine is already in pool %s", app.ErrInvalid, cur.PoolID())
	}
	addrs, err := p.findPool(ctx, code.PoolID(), req.Addr)
	if err != nil {
		return app.PoolStatus{}, err
	}
	var errs []error
	for _, addr := range addrs {
		err := p.joinAt(ctx, code, addr)
		if err == nil {
			return p.Status(ctx)
		}
		if errors.Is(err, pool.ErrWrongCode) {
			return app.PoolStatus{}, &app.APIError{Status: http.StatusForbidden, Code: "wrong_code",
				Message: "the pool refused the join code: check it was typed as printed by `labpool pool create`"}
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return app.PoolStatus{}, fmt.Errorf("join pool %s: %w", code.PoolID(), errors.Join(errs...))
}

// findPool returns the addresses to try: the one given, or those of the
// pool's members found by mDNS within joinWait.
func (p *poolManager) findPool(ctx context.Context, poolID, addr string) ([]string, error) {
	if addr != "" {
		return []string{addr}, nil
	}
	deadline := time.Now().Add(joinWait)
	for {
		if addrs := p.d().poolCandidates(poolID); len(addrs) > 0 {
			return addrs, nil
		}
		if time.Now().After(deadline) {
			return nil, &app.APIError{Status: http.StatusNotFound, Code: "pool_not_found",
				Message: fmt.Sprintf("no member of pool %s answered on the local network in %s: give an address, `labpool pool join CODE HOST:PORT`", poolID, joinWait)}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// joinAt runs the join handshake with the machine at addr.
func (p *poolManager) joinAt(ctx context.Context, code pool.Code, addr string) error {
	d := p.d()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := d.ep.DialAny(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ekm, err := conn.KeyingMaterial()
	if err != nil {
		return err
	}
	resp, err := pool.Join(ctx, conn.Client(), ekm, code, d.id.ID, d.name)
	if err != nil {
		return err
	}
	for _, m := range resp.Members {
		if _, err := d.db.PutMember(ctx, memberRow(m)); err != nil {
			return err
		}
	}
	if err := p.enter(ctx, code); err != nil {
		return err
	}
	d.peers.Hint(conn.PeerID().String(), addr)
	d.log.Info("joined pool", "pool", code.PoolID(), "via", conn.PeerID())
	return nil
}

// Remove implements app.PoolManager: a tombstone that outranks the member's
// row, replicated to every member.
func (p *poolManager) Remove(ctx context.Context, who string) error {
	d := p.d()
	rows, err := d.db.Members(ctx)
	if err != nil {
		return err
	}
	var match []store.MemberRow
	for _, m := range rows {
		if !m.Removed && (m.ID == who || strings.EqualFold(m.Name, who) || strings.HasPrefix(m.ID, strings.ToUpper(who))) {
			match = append(match, m)
		}
	}
	switch {
	case len(match) == 0:
		return fmt.Errorf("%w: no member %q in the pool", app.ErrNotFound, who)
	case len(match) > 1:
		return fmt.Errorf("%w: %q matches %d members: give more of the device ID", app.ErrInvalid, who, len(match))
	case match[0].ID == d.id.ID.String():
		return fmt.Errorf("%w: this machine cannot remove itself", app.ErrInvalid)
	}
	m := match[0]
	m.Removed, m.Version, m.AddedBy = true, m.Version+1, d.id.ID.String()
	_, err = d.db.PutMember(ctx, m)
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

// joinHandler admits devices that prove they hold our pool's code.
func (d *Daemon) joinHandler() http.Handler {
	p := (*poolManager)(d)
	return pool.JoinHandler(pool.JoinConfig{
		Self: d.id.ID,
		Name: func() string { return d.name },
		Pool: func() (pool.Code, bool) {
			c, ok, err := p.current(context.Background())
			return c, ok && err == nil
		},
		Members: func() []pool.Member {
			rows, err := d.db.Members(context.Background())
			if err != nil {
				return nil
			}
			out := make([]pool.Member, 0, len(rows))
			for _, r := range rows {
				if m, err := poolMember(r); err == nil {
					out = append(out, m)
				}
			}
			return out
		},
		Admit: func(m pool.Member) error {
			_, err := d.db.PutMember(context.Background(), memberRow(m))
			if err == nil {
				d.log.Info("admitted a device to the pool", "peer", m.ID, "name", m.Name)
			}
			return err
		},
	})
}

func memberRow(m pool.Member) store.MemberRow {
	return store.MemberRow{ID: m.ID.String(), Name: m.Name, Version: m.Version, Removed: m.Removed, AddedAt: m.AddedAt, AddedBy: m.AddedBy.String()}
}

func poolMember(r store.MemberRow) (pool.Member, error) {
	id, err := peer.ParseID(r.ID)
	if err != nil {
		return pool.Member{}, err
	}
	by, _ := peer.ParseID(r.AddedBy)
	return pool.Member{ID: id, Name: r.Name, Version: r.Version, Removed: r.Removed, AddedAt: r.AddedAt, AddedBy: by}, nil
}
