package daemon

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// openCopies builds this machine's copy engine (run under run's errgroup).
func (d *Daemon) openCopies() {
	cfg := copies.DefaultConfig()
	cfg.Self, cfg.MaxWait = d.id.ID.String(), app.MaxTransferWait
	d.copies = copies.New(cfg, copies.Deps{Folders: d.folders, Store: d.db, Dialer: d, Members: members{d},
		Signer: signer{d.id}, Changed: d.republish, Log: d.log})
}

var _ copies.Store = (*store.DB)(nil)

// cancelCopiesOf ends at once the copies of a device removed from the pool.
func (d *Daemon) cancelCopiesOf(device string) { d.copies.CancelOf(device) }

// members finds and calls the pool's members through the service.
type members struct{ d *Daemon }

// Resolve implements copies.Members.
func (m members) Resolve(ctx context.Context, ref string) (string, error) {
	n, err := m.d.svc.NodeByRef(ctx, ref)
	return n.ID, err
}

// Do implements copies.Members and alerting.NodeCaller (peerapi.Doer).
func (m members) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	return m.d.svc.Do(ctx, node, r)
}

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

// republish measures the share name again after a copy into it (the copy
// engine is built before the publisher).
func (d *Daemon) republish(ctx context.Context, name string) { d.shares.Republish(ctx, name) }
