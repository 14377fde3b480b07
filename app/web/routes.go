package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
)

// API is what the route table calls; *app.Service implements it.
type API interface {
	Self(ctx context.Context) (app.Self, error)
	Nodes(ctx context.Context) ([]app.Node, error)
	GPUs(ctx context.Context) ([]app.GPU, error)
	History(ctx context.Context, node string, seconds int) (app.History, error)
	Pool(ctx context.Context) (app.PoolStatus, error)
	CreatePool(ctx context.Context) (app.JoinCode, error)
	JoinPool(ctx context.Context, req app.JoinRequest) (app.PoolStatus, error)
	RemoveMember(ctx context.Context, id string) error
	Invites(ctx context.Context) ([]app.Invite, error)
	CreateInvite(ctx context.Context, req app.InviteRequest) (app.NewInvite, error)
	RevokeInvite(ctx context.Context, id string) error
	SetRole(ctx context.Context, id, role string) error
	Probe(ctx context.Context, addr string) (app.ProbeResult, error)
	Hub() *app.Hub

	Jobs(ctx context.Context, all bool) ([]app.Job, error)
	Job(ctx context.Context, ref string) (app.Job, error)
	Plan(ctx context.Context, req app.LaunchRequest) (app.Plan, error)
	Launch(ctx context.Context, req app.LaunchRequest) (app.Job, error)
	StopJob(ctx context.Context, ref string) (app.Job, error)
	RemoveJob(ctx context.Context, ref string) error
	JobStats(ctx context.Context, ref string) (jobs.Stats, error)
	Logs(ctx context.Context, ref string, follow bool, tail int) (io.ReadCloser, error)
	Open(ctx context.Context, ref string, port int) (app.Tunnel, error)
	TunnelList(ctx context.Context) ([]app.Tunnel, error)
	Images(ctx context.Context, node string) ([]jobs.Image, error)
	LoadImage(ctx context.Context, node string, archive io.Reader, force bool) (io.ReadCloser, error)
	PullImage(ctx context.Context, req app.PullRequest) (io.ReadCloser, error)

	Folders(ctx context.Context) ([]app.Folder, error)
	Share(ctx context.Context, req app.ShareRequest) (app.Folder, error)
	Unshare(ctx context.Context, name string) error
	Ls(ctx context.Context, node, folder, path string) ([]folders.Entry, error)
	Copy(ctx context.Context, req app.CopyRequest) (app.Transfer, error)
	Transfer(ctx context.Context, node, id string, wait time.Duration) (app.Transfer, error)
	Transfers(ctx context.Context) ([]app.Transfer, error)

	Policy(ctx context.Context) (app.Policy, error)
	SetPolicy(ctx context.Context, u app.PolicyUpdate) (app.Policy, error)
}

var _ API = (*app.Service)(nil)

// Route is one call of the local API. /api/v1/policy is reached only on the
// unix socket: the guard of `labpool web` refuses it ("local_only").
type Route struct {
	Method, Path string
	serve        func(h *handler) http.HandlerFunc
}

// Routes is the local API: adding a call is one line here over a method of
// the Service.
var Routes = []Route{
	{"GET", "/api/v1/self", call(none, noArg(API.Self))},
	{"GET", "/api/v1/nodes", call(none, noArg(API.Nodes))},
	{"GET", "/api/v1/gpus", call(none, noArg(API.GPUs))},
	{"GET", "/api/v1/history", call(historyArgs, history)},
	{"GET", "/api/v1/pool", call(none, noArg(API.Pool))},
	{"POST", "/api/v1/pool/create", call(none, noArg(API.CreatePool))},
	{"POST", "/api/v1/pool/join", call(body[app.JoinRequest], API.JoinPool)},
	{"DELETE", "/api/v1/pool/members/{id}", empty(pathValue("id"), API.RemoveMember)},
	{"PUT", "/api/v1/pool/members/{id}/role", empty(roleArgs, setRole)},
	{"GET", "/api/v1/pool/invites", call(none, noArg(API.Invites))},
	{"POST", "/api/v1/pool/invites", call(body[app.InviteRequest], API.CreateInvite)},
	{"DELETE", "/api/v1/pool/invites/{id}", empty(pathValue("id"), API.RevokeInvite)},
	{"POST", "/api/v1/probe", call(body[app.ProbeRequest], probe)},
	{"GET", "/api/v1/events", func(h *handler) http.HandlerFunc { return h.events }},

	{"GET", "/api/v1/jobs", call(allArg, API.Jobs)},
	{"POST", "/api/v1/jobs", call(body[app.LaunchRequest], API.Launch)},
	{"POST", "/api/v1/jobs/plan", call(body[app.LaunchRequest], API.Plan)},
	{"GET", "/api/v1/jobs/{id}", call(pathValue("id"), API.Job)},
	{"POST", "/api/v1/jobs/{id}/stop", call(pathValue("id"), API.StopJob)},
	{"DELETE", "/api/v1/jobs/{id}", empty(pathValue("id"), API.RemoveJob)},
	{"GET", "/api/v1/jobs/{id}/logs", stream("text/plain; charset=utf-8", logsArgs, logs)},
	{"GET", "/api/v1/jobs/{id}/stats", call(pathValue("id"), API.JobStats)},
	{"POST", "/api/v1/jobs/{id}/open", call(openArgs, open)},
	{"GET", "/api/v1/tunnels", call(none, noArg(API.TunnelList))},
	{"GET", "/api/v1/images", call(queryValue("node"), API.Images)},
	{"POST", "/api/v1/images/load", fullDuplex(stream("application/x-ndjson", loadArgs, loadImage))},
	{"POST", "/api/v1/images/pull", stream("application/x-ndjson", body[app.PullRequest], API.PullImage)},

	{"GET", "/api/v1/folders", call(none, noArg(API.Folders))},
	{"POST", "/api/v1/folders", call(body[app.ShareRequest], API.Share)},
	{"DELETE", "/api/v1/folders/{name}", empty(pathValue("name"), API.Unshare)},
	{"GET", "/api/v1/ls", call(lsArgs, ls)},
	{"POST", "/api/v1/copy", call(body[app.CopyRequest], API.Copy)},
	{"GET", "/api/v1/transfers", call(none, noArg(API.Transfers))},
	{"GET", "/api/v1/transfers/{id}", call(transferArgs, transfer)},

	{"GET", "/api/v1/policy", call(none, noArg(API.Policy))},
	{"PUT", "/api/v1/policy", call(body[app.PolicyUpdate], API.SetPolicy)},
}

// call decodes a request with in, calls do and answers its result as JSON.
func call[In, Out any](in func(*http.Request) (In, error), do func(API, context.Context, In) (Out, error)) func(*handler) http.HandlerFunc {
	return func(h *handler) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			v, err := in(r)
			if err != nil {
				h.reply(w, nil, err)
				return
			}
			out, err := do(h.api, r.Context(), v)
			h.reply(w, out, err)
		}
	}
}

// empty is call for a method that returns only an error: 204 on success.
func empty[In any](in func(*http.Request) (In, error), do func(API, context.Context, In) error) func(*handler) http.HandlerFunc {
	return call(in, func(a API, ctx context.Context, v In) (noContent, error) { return noContent{}, do(a, ctx, v) })
}

// stream is call for a method whose reply is a stream, copied to the
// client as it comes.
func stream[In any](contentType string, in func(*http.Request) (In, error), do func(API, context.Context, In) (io.ReadCloser, error)) func(*handler) http.HandlerFunc {
	return func(h *handler) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			v, err := in(r)
			if err != nil {
				h.reply(w, nil, err)
				return
			}
			rc, err := do(h.api, r.Context(), v)
			if err != nil {
				h.reply(w, nil, err)
				return
			}
			defer rc.Close()
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusOK)
			jobs.CopyFlushing(w, rc)
		}
	}
}

// fullDuplex lets serve keep reading the request body after its reply has
// started: the node answers an image load with progress while the archive
// is still arriving (HTTP/1.1).
func fullDuplex(serve func(*handler) http.HandlerFunc) func(*handler) http.HandlerFunc {
	return func(h *handler) http.HandlerFunc {
		next := serve(h)
		return func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).EnableFullDuplex()
			next(w, r)
		}
	}
}

// noContent is the result of a call that answers 204.
type noContent struct{}

func noArg[Out any](do func(API, context.Context) (Out, error)) func(API, context.Context, struct{}) (Out, error) {
	return func(a API, ctx context.Context, _ struct{}) (Out, error) { return do(a, ctx) }
}

func none(*http.Request) (struct{}, error) { return struct{}{}, nil }

// body decodes a JSON request body of at most maxBody bytes.
func body[T any](r *http.Request) (T, error) {
	var v T
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&v); err != nil {
		return v, fmt.Errorf("%w: decode request: %v", app.ErrInvalid, err)
	}
	return v, nil
}

func pathValue(name string) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) { return r.PathValue(name), nil }
}

func queryValue(name string) func(*http.Request) (string, error) {
	return func(r *http.Request) (string, error) { return r.URL.Query().Get(name), nil }
}
