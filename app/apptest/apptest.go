// Package apptest builds an app.Service for the tests of the packages
// above app (app/web, app/cli): a Service over a replica whose daemon
// parts, where a test gives none, read the pool from the replica and
// refuse the rest with app.ErrReadOnly; and Serve serves the local API to
// them.
package apptest

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/store"
)

// Offline answers that no node is online.
type offline struct{}

func (offline) Online(string) bool { return false }

// NewService returns a service over db with pool as its pool manager (the
// replica's pool when nil) and live as its liveness (nobody online when nil).
func NewService(db *store.DB, self app.Self, live app.Liveness, pool app.PoolManager) *app.Service {
	r := app.NewReader(db, self)
	if live == nil {
		live = offline{}
	}
	nd := noDaemon{r}
	if pool == nil {
		pool = nd
	}
	s, err := app.New(app.Deps{DB: db, Self: self, Live: live, Pool: pool, Nodes: nd, Folders: nd, Copier: nd, Policy: nd})
	if err != nil {
		panic(err)
	}
	return s
}

// noDaemon stands in for every part of a daemon: it reads the pool from
// the replica and refuses the rest with app.ErrReadOnly.
type noDaemon struct{ r *app.Reader }

func (n noDaemon) Status(ctx context.Context) (app.PoolStatus, error) { return n.r.Pool(ctx) }
func (noDaemon) Create(context.Context, app.CreateRequest) (app.JoinCode, error) {
	return app.JoinCode{}, app.ErrReadOnly
}
func (noDaemon) AddDevice(context.Context, app.AddDeviceRequest) (app.DeviceCode, error) {
	return app.DeviceCode{}, app.ErrReadOnly
}
func (noDaemon) Merge(context.Context, app.MergeRequest) error { return app.ErrReadOnly }
func (noDaemon) Join(context.Context, app.JoinRequest) (app.PoolStatus, error) {
	return app.PoolStatus{}, app.ErrReadOnly
}
func (noDaemon) Remove(context.Context, string) error { return app.ErrReadOnly }
func (noDaemon) Probe(context.Context, string) (app.ProbeResult, error) {
	return app.ProbeResult{}, app.ErrReadOnly
}
func (noDaemon) CreateInvite(context.Context, app.InviteRequest) (app.NewInvite, error) {
	return app.NewInvite{}, app.ErrReadOnly
}
func (noDaemon) RevokeInvite(context.Context, string) error    { return app.ErrReadOnly }
func (noDaemon) Readmit(context.Context, string) error         { return app.ErrReadOnly }
func (noDaemon) SetRole(context.Context, string, string) error { return app.ErrReadOnly }
func (noDaemon) NodeClient(context.Context, string) (*http.Client, error) {
	return nil, app.ErrReadOnly
}
func (noDaemon) Share(context.Context, app.ShareRequest) (app.Folder, error) {
	return app.Folder{}, app.ErrReadOnly
}
func (noDaemon) Unshare(context.Context, string) error { return app.ErrReadOnly }

func (noDaemon) SetMembers(context.Context, string, folders.MembersChange) (app.Folder, error) {
	return app.Folder{}, app.ErrReadOnly
}
func (noDaemon) Copy(context.Context, app.CopyRequest) (app.Transfer, error) {
	return app.Transfer{}, app.ErrReadOnly
}
func (noDaemon) Transfer(context.Context, string, string, time.Duration) (app.Transfer, error) {
	return app.Transfer{}, app.ErrReadOnly
}
func (noDaemon) Transfers(context.Context) ([]app.Transfer, error) { return []app.Transfer{}, nil }
func (noDaemon) Policy(context.Context) (app.Policy, error)        { return app.Policy{}, app.ErrReadOnly }
func (noDaemon) SetPolicy(context.Context, app.PolicyUpdate) (app.Policy, error) {
	return app.Policy{}, app.ErrReadOnly
}

// Serve serves h on ln until t ends, and waits for the server to be done.
func Serve(t testing.TB, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
}
