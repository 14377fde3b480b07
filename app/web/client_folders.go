package web

import (
	"context"
	"github.com/labpool/labpool/app"
	"net/http"
	"net/url"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// Folders lists every shared folder of the pool.
func (c *Client) Folders(ctx context.Context) ([]app.Folder, error) {
	var f []app.Folder
	return f, c.do(ctx, http.MethodGet, "/api/v1/folders", nil, &f)
}

// Share shares a directory of the daemon's machine.
func (c *Client) Share(ctx context.Context, req app.ShareRequest) (app.Folder, error) {
	var f app.Folder
	return f, c.do(ctx, http.MethodPost, "/api/v1/folders", req, &f)
}

// SetFolderMembers changes who may use a folder, on the machine that holds it (req.Node).
func (c *Client) SetFolderMembers(ctx context.Context, req app.FolderMembersRequest) (app.Folder, error) {
	var f app.Folder
	return f, c.do(ctx, http.MethodPut, "/api/v1/folders/"+url.PathEscape(req.Name)+"/members", req, &f)
}

// Unshare stops sharing a folder of the daemon's machine.
func (c *Client) Unshare(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/folders/"+url.PathEscape(name), nil, nil)
}

// Ls lists a directory of a shared folder.
func (c *Client) Ls(ctx context.Context, node, folder, path string) ([]folders.Entry, error) {
	var es []folders.Entry
	q := url.Values{"node": {node}, "folder": {folder}, "path": {path}}
	return es, c.do(ctx, http.MethodGet, "/api/v1/ls?"+q.Encode(), nil, &es)
}

// Copy starts a copy.
func (c *Client) Copy(ctx context.Context, req app.CopyRequest) (app.Transfer, error) {
	var t app.Transfer
	return t, c.do(ctx, http.MethodPost, "/api/v1/copy", req, &t)
}

// Transfer returns the state of a copy running on node, once it has ended
// or wait has passed.
func (c *Client) Transfer(ctx context.Context, node, id string, wait time.Duration) (app.Transfer, error) {
	var t app.Transfer
	q := url.Values{"node": {node}}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return t, c.do(ctx, http.MethodGet, "/api/v1/transfers/"+url.PathEscape(id)+"?"+q.Encode(), nil, &t)
}

// Transfers lists the copies started through the daemon.
func (c *Client) Transfers(ctx context.Context) ([]app.Transfer, error) {
	var t []app.Transfer
	return t, c.do(ctx, http.MethodGet, "/api/v1/transfers", nil, &t)
}
