// Package web serves the local API of app.Service over HTTP: on a unix socket
// in the data directory for the CLI and the window, and on loopback TCP for a
// browser, together with the UI's static files.
package web

//go:generate go run ./tsgen -o ../../frontend/src/api/types.gen.ts

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/labpool/labpool/app"
)

// maxBody bounds request bodies of the local API.
const maxBody = 1 << 20

// Handler returns the local API of Routes under /api/v1/ and, when assets is
// not nil, the UI's files everywhere else.
func Handler(svc *app.Service, assets fs.FS, log *slog.Logger) http.Handler {
	h := &handler{svc: svc, log: log}
	mux := http.NewServeMux()
	for _, rt := range Routes {
		mux.HandleFunc(rt.Method+" "+rt.Path, rt.serve(h))
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
	svc *app.Service
	log *slog.Logger
}

// events streams the hub as Server-Sent Events, with a comment line every
// 15 s so proxies and clients see the stream is alive.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	ch, cancel := h.svc.Hub().Subscribe()
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

// reply answers v as JSON, an error as {code, message}, and a noContent
// with 204.
func (h *handler) reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, body := Encode(err)
		if status >= 500 {
			h.log.Error("local api", "err", err)
		}
		writeBody(w, status, body)
		return
	}
	if _, ok := v.(noContent); ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Debug("write reply", "err", err)
	}
}
