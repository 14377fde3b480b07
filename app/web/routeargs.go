package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
)

// The calls of the Service that take more than one argument: what the route
// reads from the path, the query and the body, and how it spreads them.

// invalid is a refusal of a request's arguments: 400 "invalid".
func invalid(msg string) error {
	return &app.APIError{Status: http.StatusBadRequest, Code: "invalid", Message: msg}
}

type historyReq struct {
	node    string
	seconds int
}

func historyArgs(r *http.Request) (historyReq, error) {
	seconds, err := strconv.Atoi(r.URL.Query().Get("seconds"))
	if err != nil {
		return historyReq{}, invalid("seconds must be a whole number")
	}
	return historyReq{r.URL.Query().Get("node"), seconds}, nil
}

func history(a *app.Service, ctx context.Context, v historyReq) (app.History, error) {
	return a.History(ctx, v.node, v.seconds)
}

type roleReq struct{ id, role string }

func roleArgs(r *http.Request) (roleReq, error) {
	req, err := body[app.RoleRequest](r)
	return roleReq{r.PathValue("id"), req.Role}, err
}

func setRole(a *app.Service, ctx context.Context, v roleReq) error {
	return a.SetRole(ctx, v.id, v.role)
}

func probe(a *app.Service, ctx context.Context, req app.ProbeRequest) (app.ProbeResult, error) {
	return a.Probe(ctx, req.Addr)
}

func allArg(r *http.Request) (bool, error) { return r.URL.Query().Get("all") != "", nil }

type logsReq struct {
	ref    string
	follow bool
	tail   int
}

func logsArgs(r *http.Request) (logsReq, error) {
	q := r.URL.Query()
	v := logsReq{ref: r.PathValue("id"), follow: q.Get("follow") != "", tail: -1}
	if s := q.Get("tail"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			return v, invalid("tail must be a whole number of lines")
		}
		v.tail = n
	}
	return v, nil
}

func logs(a *app.Service, ctx context.Context, v logsReq) (io.ReadCloser, error) {
	return a.Logs(ctx, v.ref, v.follow, v.tail)
}

type openReq struct {
	ref  string
	port int
}

func openArgs(r *http.Request) (openReq, error) {
	req, err := body[app.OpenRequest](r)
	return openReq{r.PathValue("id"), req.Port}, err
}

func open(a *app.Service, ctx context.Context, v openReq) (app.Tunnel, error) {
	return a.Open(ctx, v.ref, v.port)
}

type loadReq struct {
	node    string
	archive io.Reader
	force   bool
}

// loadArgs passes the archive on as it arrives.
func folderMembersArgs(r *http.Request) (app.FolderMembersRequest, error) {
	req, err := body[app.FolderMembersRequest](r)
	req.Name = r.PathValue("name")
	return req, err
}

func removeArgs(r *http.Request) (app.RemoveRequest, error) {
	return app.RemoveRequest{Ref: r.PathValue("id"), Force: r.URL.Query().Get("force") == "1"}, nil
}

func loadArgs(r *http.Request) (loadReq, error) {
	return loadReq{r.URL.Query().Get("node"), r.Body, r.URL.Query().Get("force") == "1"}, nil
}

func loadImage(a *app.Service, ctx context.Context, v loadReq) (io.ReadCloser, error) {
	return a.LoadImage(ctx, v.node, v.archive, v.force)
}

type lsReq struct{ node, folder, path string }

func lsArgs(r *http.Request) (lsReq, error) {
	q := r.URL.Query()
	return lsReq{q.Get("node"), q.Get("folder"), q.Get("path")}, nil
}

func ls(a *app.Service, ctx context.Context, v lsReq) ([]folders.Entry, error) {
	return a.Ls(ctx, v.node, v.folder, v.path)
}

type transferReq struct {
	node, id string
	wait     time.Duration
}

func transferArgs(r *http.Request) (transferReq, error) {
	v := transferReq{node: r.URL.Query().Get("node"), id: r.PathValue("id")}
	if s := r.URL.Query().Get("wait"); s != "" {
		var err error
		if v.wait, err = time.ParseDuration(s); err != nil {
			return v, fmt.Errorf("%w: wait %q: want a duration such as 250ms", app.ErrInvalid, s)
		}
	}
	return v, nil
}

func transfer(a *app.Service, ctx context.Context, v transferReq) (app.Transfer, error) {
	return a.Transfer(ctx, v.node, v.id, v.wait)
}
