package daemon

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/sharing"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/jobs"
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
		Signer: signer{id}, Changed: shares.Republish, Log: log})
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

// Call implements copies.Members and alerting.NodeCaller.
func (m serviceMembers) Call(ctx context.Context, node, method, path string, in, out any) error {
	svc, ok := m.svc.get()
	if !ok {
		return errNoService
	}
	return svc.NodeCall(ctx, node, method, path, in, out)
}

// errNoService is the answer of serviceMembers before the service is built.
var errNoService = errors.New("call a member: the service is not built yet")

// signer signs this machine's grants and launches with its key.
type signer struct{ id *peer.Identity }

// key is this machine's device key and its public half.
func (s signer) key() (ed25519.PrivateKey, ed25519.PublicKey, error) {
	key, ok := s.id.Cert.PrivateKey.(ed25519.PrivateKey)
	if !ok {
		return nil, nil, errors.New("this machine's key is not an Ed25519 key")
	}
	return key, key.Public().(ed25519.PublicKey), nil
}

// Grant implements copies.Signer.
func (s signer) Grant(src, folder, p, receiver string, now time.Time) (string, error) {
	key, pub, err := s.key()
	if err != nil {
		return "", err
	}
	fs := folders.Signer{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }}
	return fs.Grant(src, folder, p, receiver, now)
}

// ProveLaunch implements app.LaunchSigner: this member's signature on a
// launch of spec on node (this machine's own launches included: its key is
// its local user's).
func (s signer) ProveLaunch(node string, spec jobs.Spec) (string, error) {
	key, pub, err := s.key()
	if err != nil {
		return "", err
	}
	return jobs.LaunchSigner{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }}.Prove(node, spec)
}

// copier adapts the copy engine to app.Copier.
type copier struct{ r *copies.Receiver }

// Copy implements app.Copier.
func (c copier) Copy(ctx context.Context, req app.CopyRequest) (app.Transfer, error) {
	t, err := c.r.Copy(ctx, copies.Request(req))
	return t, serviceError(err)
}

// Transfer implements app.Copier.
func (c copier) Transfer(ctx context.Context, node, id string, wait time.Duration) (app.Transfer, error) {
	t, err := c.r.Transfer(ctx, node, id, wait)
	return t, serviceError(err)
}

// Transfers implements app.Copier.
func (c copier) Transfers(ctx context.Context) ([]app.Transfer, error) {
	list, err := c.r.Transfers(ctx)
	return list, serviceError(err)
}

// serviceError is a refusal of the copy engine as the service's sentinel,
// with the same text, so that the local API answers with its code.
func serviceError(err error) error {
	switch {
	case errors.Is(err, copies.ErrNotFound):
		return kindError{app.ErrNotFound, err}
	case errors.Is(err, copies.ErrInvalid):
		return kindError{app.ErrInvalid, err}
	}
	return err
}

// kindError is err, also matching kind.
type kindError struct{ kind, err error }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.kind, e.err} }
