package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// Route is one call of the local API. /api/v1/policy is reached only on the
// unix socket: the guard of `labpool web` refuses it ("local_only").
type Route struct {
	Method, Path string
	adapter
}

// adapter serves a route over a handler, and knows the Go types of the
// request it decodes and of the reply it encodes (nil: none or a stream).
type adapter struct {
	serve   func(h *handler) http.HandlerFunc
	in, out reflect.Type
}

// Types returns the Go types a route carries as JSON, for the TypeScript
// generator: the request body (nil when the request is read from the path
// and query) and the reply (nil for 204 and streams).
func (r Route) Types() (body, reply reflect.Type) {
	if r.in != nil && r.in.Kind() == reflect.Struct && r.in.PkgPath() != reflect.TypeFor[Route]().PkgPath() {
		body = r.in // a JSON body: the arguments this package reads are its own types
	}
	if r.out != nil && r.out != reflect.TypeFor[noContent]() {
		reply = r.out
	}
	return body, reply
}

// Routes is the local API: adding a call is one line here over a method of
// the Service (and, to call it from the CLI, web.Call or a Client method).
var Routes = []Route{
	{"GET", "/api/v1/self", call(none, noArg((*app.Service).Self))},
	{"GET", "/api/v1/version", call(none, noArg((*app.Service).Version))},
	{"GET", "/api/v1/nodes", call(none, noArg((*app.Service).Nodes))},
	{"GET", "/api/v1/gpus", call(none, noArg((*app.Service).GPUs))},
	{"POST", "/api/v1/gpus/{ref}/clear", call(pathValue("ref"), (*app.Service).ClearGPU)},
	{"GET", "/api/v1/history", call(historyArgs, history)},
	{"GET", "/api/v1/history/series", call(seriesArgs, series)},
	{"GET", "/api/v1/history/pool", call(poolHistoryArgs, poolHistory)},
	{"GET", "/api/v1/report", call(reportArgs, report)},
	{"GET", "/api/v1/pool", call(none, noArg((*app.Service).Pool))},
	{"POST", "/api/v1/pool/create", call(optionalBody[app.CreateRequest], (*app.Service).CreatePool)},
	{"POST", "/api/v1/pool/join", call(body[app.JoinRequest], (*app.Service).JoinPool)},
	{"DELETE", "/api/v1/pool/members/{id}", empty(pathValue("id"), (*app.Service).RemoveMember)},
	{"POST", "/api/v1/pool/members/{id}/readmit", empty(pathValue("id"), (*app.Service).ReadmitMember)},
	{"PUT", "/api/v1/pool/members/{id}/role", empty(roleArgs, setRole)},
	{"POST", "/api/v1/pool/devices", call(body[app.AddDeviceRequest], (*app.Service).AddDevice)},
	{"POST", "/api/v1/pool/merge", empty(body[app.MergeRequest], (*app.Service).MergePeople)},
	{"GET", "/api/v1/pool/invites", call(none, noArg((*app.Service).Invites))},
	{"POST", "/api/v1/pool/invites", call(body[app.InviteRequest], (*app.Service).CreateInvite)},
	{"DELETE", "/api/v1/pool/invites/{id}", empty(pathValue("id"), (*app.Service).RevokeInvite)},
	{"POST", "/api/v1/probe", call(body[app.ProbeRequest], probe)},
	{"GET", "/api/v1/events", adapter{serve: func(h *handler) http.HandlerFunc { return h.events }}},

	{"GET", "/api/v1/jobs", call(allArg, (*app.Service).Jobs)},
	{"POST", "/api/v1/jobs", call(body[app.LaunchRequest], (*app.Service).Launch)},
	{"POST", "/api/v1/jobs/plan", call(body[app.LaunchRequest], (*app.Service).Plan)},
	{"GET", "/api/v1/jobs/{id}", call(pathValue("id"), (*app.Service).JobView)},
	{"POST", "/api/v1/jobs/{id}/stop", call(pathValue("id"), (*app.Service).StopJob)},
	{"DELETE", "/api/v1/jobs/{id}", empty(removeArgs, (*app.Service).RemoveJob)},
	{"GET", "/api/v1/jobs/{id}/logs", stream("text/plain; charset=utf-8", logsArgs, logs)},
	{"GET", "/api/v1/jobs/{id}/stats", call(pathValue("id"), (*app.Service).JobStats)},
	{"POST", "/api/v1/jobs/{id}/open", call(openArgs, open)},
	{"GET", "/api/v1/tunnels", call(none, noArg((*app.Service).TunnelList))},
	{"GET", "/api/v1/images", call(queryValue("node"), (*app.Service).Images)},
	{"POST", "/api/v1/images/load", fullDuplex(stream("application/x-ndjson", loadArgs, loadImage))},
	{"POST", "/api/v1/images/pull", stream("application/x-ndjson", body[app.PullRequest], (*app.Service).PullImage)},

	{"GET", "/api/v1/reservations", call(none, noArg((*app.Service).Reservations))},
	{"POST", "/api/v1/reservations", call(body[app.ReserveRequest], (*app.Service).Reserve)},
	{"DELETE", "/api/v1/reservations/{id}", call(pathValue("id"), (*app.Service).Unreserve)},

	{"GET", "/api/v1/folders", call(none, noArg((*app.Service).Folders))},
	{"POST", "/api/v1/folders", call(body[app.ShareRequest], (*app.Service).Share)},
	{"DELETE", "/api/v1/folders/{name}", empty(pathValue("name"), (*app.Service).Unshare)},
	{"PUT", "/api/v1/folders/{name}/members", call(folderMembersArgs, (*app.Service).SetFolderMembers)},
	{"GET", "/api/v1/ls", call(lsArgs, ls)},
	{"POST", "/api/v1/copy", call(body[app.CopyRequest], (*app.Service).Copy)},
	{"GET", "/api/v1/transfers", call(none, noArg((*app.Service).Transfers))},
	{"GET", "/api/v1/transfers/{id}", call(transferArgs, transfer)},

	{"GET", "/api/v1/alerts", call(sinceArg, alerts)},
	{"GET", "/api/v1/alerts/rules", call(queryValue("node"), (*app.Service).AlertRules)},
	{"PUT", "/api/v1/alerts/rules/{id}", call(alertRuleArgs, (*app.Service).SetAlertRule)},
	{"POST", "/api/v1/alerts/mute", call(body[app.MuteRequest], (*app.Service).MuteAlert)},
	{"GET", "/api/v1/alerts/mutes", call(queryValue("node"), (*app.Service).AlertMutes)},
	{"PUT", "/api/v1/alerts/pins/{rule}", call(pinArgs, (*app.Service).PinAlert)},
	{"GET", "/api/v1/alerts/webhook", call(none, noArg((*app.Service).AlertWebhook))},
	{"PUT", "/api/v1/alerts/webhook", call(body[app.WebhookRequest], (*app.Service).SetAlertWebhook)},

	{"GET", "/api/v1/policy", call(none, noArg((*app.Service).Policy))},
	{"PUT", "/api/v1/policy", call(body[app.PolicyUpdate], (*app.Service).SetPolicy)},
	{"GET", "/api/v1/lend", call(none, noArg((*app.Service).Lend))},
	{"PUT", "/api/v1/lend/using", call(body[app.LendUsing], (*app.Service).SetLendUsing)},
}

// call decodes a request with in, calls do and answers its result as JSON.
func call[In, Out any](in func(*http.Request) (In, error), do func(*app.Service, context.Context, In) (Out, error)) adapter {
	serve := decoded(in, func(h *handler, w http.ResponseWriter, r *http.Request, v In) {
		out, err := do(h.svc, r.Context(), v)
		h.reply(w, out, err)
	})
	return adapter{serve, reflect.TypeFor[In](), reflect.TypeFor[Out]()}
}

// empty is call for a method that returns only an error: 204 on success.
func empty[In any](in func(*http.Request) (In, error), do func(*app.Service, context.Context, In) error) adapter {
	return call(in, func(a *app.Service, ctx context.Context, v In) (noContent, error) { return noContent{}, do(a, ctx, v) })
}

// stream is call for a method whose reply is a stream, copied to the
// client as it comes.
func stream[In any](contentType string, in func(*http.Request) (In, error), do func(*app.Service, context.Context, In) (io.ReadCloser, error)) adapter {
	serve := decoded(in, func(h *handler, w http.ResponseWriter, r *http.Request, v In) {
		rc, err := do(h.svc, r.Context(), v)
		if err != nil {
			h.reply(w, nil, err)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		jobs.CopyFlushing(w, rc)
	})
	return adapter{serve: serve, in: reflect.TypeFor[In]()}
}

// decoded reads a request's arguments with in and hands them to next; a
// request it cannot read is answered with the error.
func decoded[In any](in func(*http.Request) (In, error), next func(*handler, http.ResponseWriter, *http.Request, In)) func(*handler) http.HandlerFunc {
	return func(h *handler) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			v, err := in(r)
			if err != nil {
				h.reply(w, nil, err)
				return
			}
			next(h, w, r, v)
		}
	}
}

// fullDuplex lets serve keep reading the request body after its reply has
// started: the node answers an image load with progress while the archive
// is still arriving (HTTP/1.1). What serve left unread is drained (or the
// connection given up) before the handler returns: drained after it, the
// server panics reading the connection's next request (Go issue 68560).
func fullDuplex(a adapter) adapter {
	serve := a.serve
	a.serve = func(h *handler) http.HandlerFunc {
		next := serve(h)
		return func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).EnableFullDuplex()
			defer r.Body.Close()
			next(w, r)
		}
	}
	return a
}

// noContent is the result of a call that answers 204.
type noContent struct{}

func noArg[Out any](do func(*app.Service, context.Context) (Out, error)) func(*app.Service, context.Context, struct{}) (Out, error) {
	return func(a *app.Service, ctx context.Context, _ struct{}) (Out, error) { return do(a, ctx) }
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

// optionalBody is body where an empty body is T's zero value (a client of
// before sent none).
func optionalBody[T any](r *http.Request) (T, error) {
	var v T
	err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&v)
	if err != nil && !errors.Is(err, io.EOF) {
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
