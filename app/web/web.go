// Package web serves the local API of app.Service over HTTP: on a unix socket
// in the data directory for the CLI and the window, and on loopback TCP for a
// browser, together with the UI's static files.
package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labpool/labpool/app"
)

// API is what the handler serves; *app.Service implements it.
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
}

// maxBody bounds request bodies of the local API.
const maxBody = 1 << 20

// Handler returns the local API under /api/v1/ and, when assets is not nil,
// the UI's files everywhere else.
func Handler(api API, assets fs.FS, log *slog.Logger) http.Handler {
	h := &handler{api: api, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/self", h.self)
	mux.HandleFunc("GET /api/v1/nodes", h.nodes)
	mux.HandleFunc("GET /api/v1/gpus", h.gpus)
	mux.HandleFunc("GET /api/v1/history", h.history)
	mux.HandleFunc("GET /api/v1/pool", h.pool)
	mux.HandleFunc("POST /api/v1/pool/create", h.createPool)
	mux.HandleFunc("POST /api/v1/pool/join", h.joinPool)
	mux.HandleFunc("DELETE /api/v1/pool/members/{id}", h.removeMember)
	mux.HandleFunc("PUT /api/v1/pool/members/{id}/role", h.setRole)
	mux.HandleFunc("GET /api/v1/pool/invites", h.invites)
	mux.HandleFunc("POST /api/v1/pool/invites", h.createInvite)
	mux.HandleFunc("DELETE /api/v1/pool/invites/{id}", h.revokeInvite)
	mux.HandleFunc("POST /api/v1/probe", h.probe)
	mux.HandleFunc("GET /api/v1/events", h.events)
	if ja, ok := api.(JobsAPI); ok {
		h.routeJobs(mux, ja)
	}
	if fa, ok := api.(FoldersAPI); ok {
		h.routeFolders(mux, fa)
	}
	if pa, ok := api.(PolicyAPI); ok {
		h.routePolicy(mux, pa)
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such API call: "+r.Method+" "+r.URL.Path)
	})
	if assets != nil {
		mux.Handle("/", http.FileServerFS(assets))
	}
	return mux
}

type handler struct {
	api API
	log *slog.Logger
}

func (h *handler) self(w http.ResponseWriter, r *http.Request) {
	v, err := h.api.Self(r.Context())
	h.reply(w, v, err)
}

func (h *handler) nodes(w http.ResponseWriter, r *http.Request) {
	v, err := h.api.Nodes(r.Context())
	h.reply(w, v, err)
}

func (h *handler) gpus(w http.ResponseWriter, r *http.Request) {
	v, err := h.api.GPUs(r.Context())
	h.reply(w, v, err)
}

func (h *handler) history(w http.ResponseWriter, r *http.Request) {
	seconds, err := strconv.Atoi(r.URL.Query().Get("seconds"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "seconds must be a whole number")
		return
	}
	v, err := h.api.History(r.Context(), r.URL.Query().Get("node"), seconds)
	h.reply(w, v, err)
}

func (h *handler) pool(w http.ResponseWriter, r *http.Request) {
	v, err := h.api.Pool(r.Context())
	h.reply(w, v, err)
}

func (h *handler) createPool(w http.ResponseWriter, r *http.Request) {
	v, err := h.api.CreatePool(r.Context())
	h.reply(w, v, err)
}

func (h *handler) joinPool(w http.ResponseWriter, r *http.Request) {
	var req app.JoinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "decode join request: "+err.Error())
		return
	}
	v, err := h.api.JoinPool(r.Context(), req)
	h.reply(w, v, err)
}

func (h *handler) probe(w http.ResponseWriter, r *http.Request) {
	var req app.ProbeRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "decode probe request: "+err.Error())
		return
	}
	v, err := h.api.Probe(r.Context(), req.Addr)
	h.reply(w, v, err)
}

func (h *handler) removeMember(w http.ResponseWriter, r *http.Request) {
	if err := h.api.RemoveMember(r.Context(), r.PathValue("id")); err != nil {
		h.reply(w, nil, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// events streams the hub as Server-Sent Events, with a comment line every
// 15 s so proxies and clients see the stream is alive.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	ch, cancel := h.api.Hub().Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": labpool events\n\n")
	flusher.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keep.C:
			fmt.Fprint(w, ": keepalive\n\n")
		case ev, ok := <-ch:
			if !ok {
				return
			}
			data, err := json.Marshal(ev.Data)
			if err != nil {
				h.log.Error("encode event", "event", ev.Name, "err", err)
				continue
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Name, data)
		}
		flusher.Flush()
	}
}

func (h *handler) reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, body := Encode(err)
		if status >= 500 {
			h.log.Error("local api", "err", err)
		}
		writeBody(w, status, body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Debug("write reply", "err", err)
	}
}
