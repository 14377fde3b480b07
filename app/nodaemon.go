package app

import (
	"context"
	"net/http"
	"time"

	"github.com/labpool/labpool/sync/store"
)

// NewService returns a service over db whose parts that need a daemon
// answer ErrReadOnly (and whose pool is the replica's, if pool is nil).
//
// Deprecated: build a Service with New, or read the replica with
// NewReader. This stays only while the tests of app/web and app/cli build
// their service with it.
func NewService(db *store.DB, self Self, live Liveness, pool PoolManager) *Service {
	r := NewReader(db, self)
	if live == nil {
		live = r.live
	}
	nd := noDaemon{r}
	if pool == nil {
		pool = nd
	}
	s, err := New(Deps{DB: db, Self: self, Live: live, Pool: pool, Nodes: nd, Folders: nd, Copier: nd, Policy: nd})
	if err != nil {
		panic(err)
	}
	return s
}

// noDaemon stands in for every part of a daemon: it reads the pool from
// the replica and refuses the rest with ErrReadOnly.
type noDaemon struct{ r *Reader }

func (n noDaemon) Status(ctx context.Context) (PoolStatus, error) { return n.r.Pool(ctx) }
func (noDaemon) Create(context.Context) (JoinCode, error)         { return JoinCode{}, ErrReadOnly }
func (noDaemon) Join(context.Context, JoinRequest) (PoolStatus, error) {
	return PoolStatus{}, ErrReadOnly
}
func (noDaemon) Remove(context.Context, string) error { return ErrReadOnly }
func (noDaemon) Probe(context.Context, string) (ProbeResult, error) {
	return ProbeResult{}, ErrReadOnly
}
func (noDaemon) CreateInvite(context.Context, InviteRequest) (NewInvite, error) {
	return NewInvite{}, ErrReadOnly
}
func (noDaemon) RevokeInvite(context.Context, string) error    { return ErrReadOnly }
func (noDaemon) SetRole(context.Context, string, string) error { return ErrReadOnly }
func (noDaemon) NodeClient(context.Context, string) (*http.Client, error) {
	return nil, ErrReadOnly
}
func (noDaemon) Share(context.Context, ShareRequest) (Folder, error) { return Folder{}, ErrReadOnly }
func (noDaemon) Unshare(context.Context, string) error               { return ErrReadOnly }
func (noDaemon) Copy(context.Context, CopyRequest) (Transfer, error) { return Transfer{}, ErrReadOnly }
func (noDaemon) Transfer(context.Context, string, string, time.Duration) (Transfer, error) {
	return Transfer{}, ErrReadOnly
}
func (noDaemon) Transfers(context.Context) ([]Transfer, error) { return []Transfer{}, nil }
func (noDaemon) Policy(context.Context) (Policy, error)        { return Policy{}, ErrReadOnly }
func (noDaemon) SetPolicy(context.Context, PolicyUpdate) (Policy, error) {
	return Policy{}, ErrReadOnly
}
