package app

import (
	"context"
	"encoding/json"
	"io"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
)

// DaemonClient is the local API as the window's bindings call it;
// *web.Client implements it. It lives here only while the bindings do: in a
// package that may import app/web they take the *web.Client itself.
type DaemonClient interface {
	Events(ctx context.Context, fn func(name string, data json.RawMessage)) error
	Self(ctx context.Context) (Self, error)
	Nodes(ctx context.Context) ([]Node, error)
	GPUs(ctx context.Context) ([]GPU, error)
	History(ctx context.Context, node string, seconds int) (History, error)
	Pool(ctx context.Context) (PoolStatus, error)
	CreatePool(ctx context.Context) (JoinCode, error)
	JoinPool(ctx context.Context, req JoinRequest) (PoolStatus, error)
	RemoveMember(ctx context.Context, id string) error
	Invites(ctx context.Context) ([]Invite, error)
	CreateInvite(ctx context.Context, req InviteRequest) (NewInvite, error)
	RevokeInvite(ctx context.Context, id string) error
	SetRole(ctx context.Context, id, role string) error
	Folders(ctx context.Context) ([]Folder, error)
	Share(ctx context.Context, req ShareRequest) (Folder, error)
	Unshare(ctx context.Context, name string) error
	Ls(ctx context.Context, node, folder, path string) ([]folders.Entry, error)
	Copy(ctx context.Context, req CopyRequest) (Transfer, error)
	Transfers(ctx context.Context) ([]Transfer, error)
	Jobs(ctx context.Context, all bool) ([]Job, error)
	Job(ctx context.Context, ref string) (Job, error)
	Plan(ctx context.Context, req LaunchRequest) (Plan, error)
	Launch(ctx context.Context, req LaunchRequest) (Job, error)
	StopJob(ctx context.Context, ref string) (Job, error)
	RemoveJob(ctx context.Context, ref string) error
	JobStats(ctx context.Context, ref string) (jobs.Stats, error)
	Open(ctx context.Context, ref string, port int) (Tunnel, error)
	TunnelList(ctx context.Context) ([]Tunnel, error)
	Images(ctx context.Context, node string) ([]jobs.Image, error)
	Logs(ctx context.Context, ref string, follow bool, tail int) (io.ReadCloser, error)
}
