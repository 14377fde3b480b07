// Package sharing is this machine's shared folders as the pool sees them:
// the app.FolderManager that shares and unshares them (node/folders keeps
// the registry), and their records in the replica, measured and written
// when they changed: at once, every minute (Publisher.Run) and after a
// copy into them (Publisher.Republish).
package sharing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/labpool/labpool/sync/schema"
	"log/slog"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

// Config is this machine's sharing.
type Config struct {
	Self peer.ID // this machine's device ID: the origin of its folder records
	Name string  // this machine's name, in the Folder a share returns
}

// Roles gives a device's role in the pool (*pool.Manager).
type Roles interface {
	Role(peer.ID) (pool.Role, bool)
}

// Publisher shares this machine's folders and publishes their records.
type Publisher struct {
	cfg   Config
	db    *store.DB
	reg   *folders.Registry
	roles Roles
	log   *slog.Logger

	mu   sync.Mutex        // guards last
	last map[string]string // share name -> its record's JSON, as last written
}

// New returns the publisher of the shares of reg into db.
func New(cfg Config, db *store.DB, reg *folders.Registry, roles Roles, log *slog.Logger) *Publisher {
	return &Publisher{cfg: cfg, db: db, reg: reg, roles: roles, log: log, last: map[string]string{}}
}

// Share implements app.FolderManager.
func (p *Publisher) Share(ctx context.Context, req app.ShareRequest) (app.Folder, error) {
	if r, ok := p.roles.Role(p.cfg.Self); ok && r == pool.RoleViewer {
		return app.Folder{}, fmt.Errorf("%w: viewers share nothing: ask an admin to make this machine a member to share folders", app.ErrForbidden)
	}
	prev, prevErr := p.reg.Get(req.Name) // what the name shared before, if anything
	s, err := p.reg.Add(folders.Share{Name: req.Name, Path: req.Path, ReadWrite: req.ReadWrite, Members: req.Members,
		Sharer: p.cfg.Self.String()})
	switch {
	case errors.Is(err, folders.ErrRefusedPath):
		return app.Folder{}, fmt.Errorf("%w: %v", app.ErrForbidden, err)
	case err != nil:
		return app.Folder{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	info, err := p.publish(ctx, s)
	if err != nil {
		// A share the pool cannot see is no share: what was shared
		// before under the name stays as it was.
		p.takeBack(s.Name, prev, prevErr == nil)
		if errors.Is(err, schema.ErrRefused) {
			return app.Folder{}, fmt.Errorf("%w: share %q: the replica refuses its record: %v", app.ErrForbidden, s.Name, err)
		}
		return app.Folder{}, fmt.Errorf("share %q: write its record: %w", s.Name, err)
	}
	p.log.Info("shared a folder", "folder", s.Name, "mode", s.Mode())
	return app.Folder{Node: p.cfg.Self.String(), NodeName: p.cfg.Name, Name: info.Name, Mode: info.Mode,
		SizeBytes: info.SizeBytes, Files: info.Files, AtLeast: info.AtLeast, Members: info.Members}, nil
}

// takeBack undoes a share whose record was not written: the share before
// it under name comes back (had), or the name is shared no more.
func (p *Publisher) takeBack(name string, prev folders.Share, had bool) {
	var err error
	if had {
		_, err = p.reg.Add(prev)
	} else {
		err = p.reg.Remove(name)
	}
	if err != nil {
		p.log.Warn("take back a share the replica refused", "folder", name, "err", err)
	}
}

// SetMembers implements app.FolderManager: this machine's own user
// changes a share's members as a member asking from another machine does
// (folders.ChangeMembers), its record published.
func (p *Publisher) SetMembers(ctx context.Context, name string, ch folders.MembersChange) (app.Folder, error) {
	// The app resolved the names against the pool's members already.
	info, err := folders.ChangeMembers(ctx, p.reg, folders.Access{Changed: p.publish}, folders.Caller{ID: p.cfg.Self.String()}, name, ch)
	switch {
	case errors.Is(err, schema.ErrRefused):
		return app.Folder{}, fmt.Errorf("%w: the replica refuses the record of %q: %v", app.ErrForbidden, name, err)
	case errors.Is(err, folders.ErrNoShare):
		return app.Folder{}, fmt.Errorf("%w: %v", app.ErrNotFound, err)
	case errors.Is(err, folders.ErrBadMembers):
		return app.Folder{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	case err != nil:
		return app.Folder{}, err
	}
	return app.Folder{Node: p.cfg.Self.String(), NodeName: p.cfg.Name, Name: info.Name, Mode: info.Mode,
		SizeBytes: info.SizeBytes, Files: info.Files, AtLeast: info.AtLeast, Members: info.Members}, nil
}

// Changed publishes the record of a share whose members changed on the
// request of another machine (folders.Access.Changed).
func (p *Publisher) Changed(ctx context.Context, s folders.Share) (folders.Info, error) {
	return p.publish(ctx, s)
}

// Unshare implements app.FolderManager.
func (p *Publisher) Unshare(ctx context.Context, name string) error {
	if err := p.reg.Remove(name); err != nil {
		return fmt.Errorf("%w: %v", app.ErrNotFound, err)
	}
	p.mu.Lock()
	delete(p.last, name)
	p.mu.Unlock()
	return p.write(ctx, folders.Info{Name: name, Removed: true})
}

// publish measures a share and writes its replicated record, unless it is
// what was last written.
func (p *Publisher) publish(ctx context.Context, s folders.Share) (folders.Info, error) {
	info := folders.Info{Name: s.Name, Mode: s.Mode(), Members: s.Members}
	if root, _, err := p.reg.OpenRoot(s.Name, "", false); err == nil {
		size := folders.Measure(root, folders.DefaultLimit)
		info.SizeBytes, info.Files, info.AtLeast = size.Bytes, size.Files, size.AtLeast
		root.Close()
	}
	data, _ := json.Marshal(info)
	p.mu.Lock()
	same := p.last[s.Name] == string(data)
	p.mu.Unlock()
	if same {
		return info, nil
	}
	if err := p.write(ctx, info); err != nil {
		p.log.Warn("write folder record", "folder", s.Name, "err", err)
		return info, err
	}
	p.mu.Lock()
	p.last[s.Name] = string(data)
	p.mu.Unlock()
	return info, nil
}

// Republish measures the share name again (after a copy into it) and
// publishes it if it changed.
func (p *Publisher) Republish(ctx context.Context, name string) {
	if s, err := p.reg.Get(name); err == nil {
		p.publish(ctx, s) // it logs a failure; the next minute tries again
	}
}

func (p *Publisher) write(ctx context.Context, info folders.Info) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	_, err = p.db.Append(ctx, p.cfg.Self.String(), app.KindFolder, info.Name, time.Now(), data)
	return err
}

// Run republishes every share's size and file count each minute until ctx
// is cancelled.
func (p *Publisher) Run(ctx context.Context) error {
	t := beat.NewTicker(time.Minute)
	defer t.Stop()
	for {
		for _, s := range p.reg.List() {
			p.publish(ctx, s) // it logs a failure; the next minute tries again
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
