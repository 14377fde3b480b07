package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
)

// FoldersAPI is the shared-folders part of the local API; *app.Service
// implements it:
//
//	GET    /api/v1/folders                       -> []app.Folder
//	POST   /api/v1/folders  app.ShareRequest     -> app.Folder
//	DELETE /api/v1/folders/{name}                -> 204
//	GET    /api/v1/ls?node=N&folder=F&path=P     -> []folders.Entry
//	POST   /api/v1/copy     app.CopyRequest      -> app.Transfer
//	GET    /api/v1/transfers                     -> []app.Transfer
//	GET    /api/v1/transfers/{id}?node=N&wait=D  -> app.Transfer (after its end or D)
type FoldersAPI interface {
	Folders(ctx context.Context) ([]app.Folder, error)
	Share(ctx context.Context, req app.ShareRequest) (app.Folder, error)
	Unshare(ctx context.Context, name string) error
	Ls(ctx context.Context, node, folder, path string) ([]folders.Entry, error)
	Copy(ctx context.Context, req app.CopyRequest) (app.Transfer, error)
	Transfer(ctx context.Context, node, id string, wait time.Duration) (app.Transfer, error)
	Transfers(ctx context.Context) ([]app.Transfer, error)
}

func (h *handler) routeFolders(mux *http.ServeMux, api FoldersAPI) {
	mux.HandleFunc("GET /api/v1/folders", func(w http.ResponseWriter, r *http.Request) {
		v, err := api.Folders(r.Context())
		h.reply(w, v, err)
	})
	mux.HandleFunc("POST /api/v1/folders", func(w http.ResponseWriter, r *http.Request) {
		var req app.ShareRequest
		if decodeBody(w, r, &req) {
			v, err := api.Share(r.Context(), req)
			h.reply(w, v, err)
		}
	})
	mux.HandleFunc("DELETE /api/v1/folders/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := api.Unshare(r.Context(), r.PathValue("name")); err != nil {
			h.reply(w, nil, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /api/v1/copy", func(w http.ResponseWriter, r *http.Request) {
		var req app.CopyRequest
		if decodeBody(w, r, &req) {
			v, err := api.Copy(r.Context(), req)
			h.reply(w, v, err)
		}
	})
	mux.HandleFunc("GET /api/v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		v, err := api.Transfers(r.Context())
		h.reply(w, v, err)
	})
	mux.HandleFunc("GET /api/v1/transfers/{id}", func(w http.ResponseWriter, r *http.Request) {
		var wait time.Duration
		if s := r.URL.Query().Get("wait"); s != "" {
			var err error
			if wait, err = time.ParseDuration(s); err != nil {
				h.reply(w, nil, fmt.Errorf("%w: wait %q: want a duration such as 250ms", app.ErrInvalid, s))
				return
			}
		}
		v, err := api.Transfer(r.Context(), r.URL.Query().Get("node"), r.PathValue("id"), wait)
		h.reply(w, v, err)
	})
	mux.HandleFunc("GET /api/v1/ls", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		v, err := api.Ls(r.Context(), q.Get("node"), q.Get("folder"), q.Get("path"))
		h.reply(w, v, err)
	})
}
