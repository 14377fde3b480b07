package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/sharing"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// openCopies builds this machine's copy engine: it reaches members
// through nodes and the service, signs its grants with id's key, and has
// the share publisher measure a share again after a copy into it.
func openCopies(id *peer.Identity, db *store.DB, reg *folders.Registry, nodes copies.Dialer, members copies.Members,
	shares *sharing.Publisher, log *slog.Logger) *copies.Receiver {
	cfg := copies.DefaultConfig()
	cfg.Self, cfg.MaxWait = id.ID.String(), app.MaxTransferWait
	return copies.New(cfg, copies.Deps{Folders: reg, Store: db, Dialer: nodes, Members: members,
		Signer: app.DeviceSigner{ID: id}, Changed: shares.Republish, Log: log})
}

var _ copies.Store = (*store.DB)(nil)

// serviceMembers finds and calls the pool's members through the service.
type serviceMembers struct{ svc *late[*app.Service] }

// Resolve implements copies.Members.
func (m serviceMembers) Resolve(ctx context.Context, ref string) (string, error) {
	svc, ok := m.svc.get()
	if !ok {
		return "", errNoService
	}
	n, err := svc.NodeByRef(ctx, ref)
	return n.ID, err
}

// Do implements copies.Members and alerting.NodeCaller (peerapi.Doer).
func (m serviceMembers) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	svc, ok := m.svc.get()
	if !ok {
		return nil, errNoService
	}
	return svc.Do(ctx, node, r)
}

// errNoService is the answer of serviceMembers before the service is built.
var errNoService = errors.New("call a member: the service is not built yet")
