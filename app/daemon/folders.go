package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/labpool/labpool/sync/pool"
	"net/http"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// folderManager implements app.FolderManager on the daemon.
type folderManager Daemon

// Share implements app.FolderManager.
func (f *folderManager) Share(ctx context.Context, req app.ShareRequest) (app.Folder, error) {
	d := (*Daemon)(f)
	if r, ok := d.pool.Role(d.id.ID); ok && r == pool.RoleViewer {
		return app.Folder{}, fmt.Errorf("%w: viewers share nothing: ask an admin to make this machine a member to share folders", app.ErrForbidden)
	}
	s, err := d.folders.Add(folders.Share{Name: req.Name, Path: req.Path, ReadWrite: req.ReadWrite, Members: req.Members})
	switch {
	case errors.Is(err, folders.ErrRefusedPath):
		return app.Folder{}, fmt.Errorf("%w: %v", app.ErrForbidden, err)
	case err != nil:
		return app.Folder{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	info := d.publishFolder(ctx, s)
	d.log.Info("shared a folder", "folder", s.Name, "mode", s.Mode())
	return app.Folder{Node: d.id.ID.String(), NodeName: d.name, Name: info.Name, Mode: info.Mode,
		SizeBytes: info.SizeBytes, Files: info.Files, AtLeast: info.AtLeast, Members: info.Members}, nil
}

// Unshare implements app.FolderManager.
func (f *folderManager) Unshare(ctx context.Context, name string) error {
	d := (*Daemon)(f)
	if err := d.folders.Remove(name); err != nil {
		return fmt.Errorf("%w: %v", app.ErrNotFound, err)
	}
	d.shared.mu.Lock()
	delete(d.shared.last, name)
	d.shared.mu.Unlock()
	return d.writeFolder(ctx, folders.Info{Name: name, Removed: true})
}

// publishedFolders remembers the record last written for each share, so
// that an unchanged share adds nothing to the replicated log.
type publishedFolders struct {
	mu   sync.Mutex
	last map[string]string // share name -> its record's JSON
}

// publishFolder measures a share and writes its replicated record, unless
// it is what was last written.
func (d *Daemon) publishFolder(ctx context.Context, s folders.Share) folders.Info {
	info := folders.Info{Name: s.Name, Mode: s.Mode(), Members: s.Members}
	if root, _, err := d.folders.OpenRoot(s.Name, "", false); err == nil {
		size := folders.Measure(root, folders.DefaultLimit)
		info.SizeBytes, info.Files, info.AtLeast = size.Bytes, size.Files, size.AtLeast
		root.Close()
	}
	data, _ := json.Marshal(info)
	d.shared.mu.Lock()
	same := d.shared.last[s.Name] == string(data)
	d.shared.mu.Unlock()
	if same {
		return info
	}
	if err := d.writeFolder(ctx, info); err != nil {
		d.log.Warn("write folder record", "folder", s.Name, "err", err)
		return info
	}
	d.shared.mu.Lock()
	if d.shared.last == nil {
		d.shared.last = map[string]string{}
	}
	d.shared.last[s.Name] = string(data)
	d.shared.mu.Unlock()
	return info
}

// republish measures the share name again (after a copy into it) and
// publishes it if it changed.
func (d *Daemon) republish(ctx context.Context, name string) {
	if s, err := d.folders.Get(name); err == nil {
		d.publishFolder(ctx, s)
	}
}

func (d *Daemon) writeFolder(ctx context.Context, info folders.Info) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	_, err = d.db.Append(ctx, d.id.ID.String(), app.KindFolder, info.Name, time.Now(), data)
	return err
}

// runFolders republishes every share's size and file count each minute.
func (d *Daemon) runFolders(ctx context.Context) error {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		for _, s := range d.folders.List() {
			d.publishFolder(ctx, s)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// folderHandler serves this machine's shares to the pool: each request is
// checked against the role of the device asking, and a copy's reads
// against the member who asked for the copy (its grant).
func (d *Daemon) folderHandler() http.Handler {
	return folders.Handler(d.folders, folders.Access{Caller: d.folderCaller, Role: d.folderRole})
}

// folderCaller is the device that TLS proved for r, with its role.
func (d *Daemon) folderCaller(r *http.Request) folders.Caller {
	id, _ := transport.PeerID(r)
	role, _ := d.roleOf(id)
	return folders.Caller{ID: id.String(), Role: role}
}

// folderRole is the role of the device id (text form), "" for none.
func (d *Daemon) folderRole(id string) string {
	pid, err := peer.ParseID(id)
	if err != nil {
		return ""
	}
	role, _ := d.roleOf(pid)
	return role
}
