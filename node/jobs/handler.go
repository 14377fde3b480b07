package jobs

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/node/containers"
)

// Bounds on request bodies.
const (
	maxSpec  = 1 << 20 // a launch request
	maxImage = 1 << 40 // an image archive (1 TiB)
)

// Handler serves the jobs API of this node to members; owner names who is
// asking (the device ID proven by the transport).
func Handler(m *Manager, owner func(*http.Request) string) http.Handler {
	h := &handler{m: m, owner: owner}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", h.submit)
	mux.HandleFunc("GET /v1/jobs", h.list)
	mux.HandleFunc("GET /v1/jobs/{id}", h.get)
	mux.HandleFunc("POST /v1/jobs/{id}/stop", h.stop)
	mux.HandleFunc("DELETE /v1/jobs/{id}", h.remove)
	mux.HandleFunc("GET /v1/jobs/{id}/logs", h.logs)
	mux.HandleFunc("GET /v1/jobs/{id}/stats", h.stats)
	mux.HandleFunc("POST /v1/jobs/{id}/tunnel", h.tunnel)
	mux.HandleFunc("GET /v1/images", h.images)
	mux.HandleFunc("POST /v1/images/load", h.load)
	mux.HandleFunc("POST /v1/images/pull", h.pull)
	return mux
}

type handler struct {
	m     *Manager
	owner func(*http.Request) string
}

// DecodeSpec reads a launch request body (network input).
func DecodeSpec(r io.Reader) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(io.LimitReader(r, maxSpec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, &RefusedError{Rule: "request", Detail: "decode the job spec: " + err.Error()}
	}
	return s, nil
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	spec, err := DecodeSpec(r.Body)
	if err != nil {
		reply(w, nil, err)
		return
	}
	j, err := h.m.Submit(r.Context(), h.owner(r), spec)
	reply(w, j, err)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) { reply(w, h.m.List(), nil) }

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	j, err := h.m.Get(r.PathValue("id"))
	reply(w, j, err)
}

func (h *handler) stop(w http.ResponseWriter, r *http.Request) {
	j, err := h.m.Stop(r.Context(), r.PathValue("id"))
	reply(w, j, err)
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	if err := h.m.Remove(r.Context(), r.PathValue("id")); err != nil {
		reply(w, nil, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) stats(w http.ResponseWriter, r *http.Request) {
	s, err := h.m.Stats(r.Context(), r.PathValue("id"))
	reply(w, s, err)
}

func (h *handler) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail := -1
	if s := q.Get("tail"); s != "" && s != "all" {
		n, err := strconv.Atoi(s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid", "tail "+strconv.Quote(s)+": want a number of lines")
			return
		}
		tail = max(n, -1) // a negative count asks for every line

	}
	follow := q.Get("follow") != "" && q.Get("follow") != "0" && q.Get("follow") != "false"
	rc, err := h.m.Logs(r.Context(), r.PathValue("id"), follow, tail)
	if err != nil {
		reply(w, nil, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	CopyFlushing(w, rc)
}

// CopyFlushing copies a streamed body r to w, flushing each chunk as it
// arrives (logs, progress), until r ends or the client goes away.
func CopyFlushing(w http.ResponseWriter, r io.Reader) {
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

func (h *handler) tunnel(w http.ResponseWriter, r *http.Request) {
	j, err := h.m.Get(r.PathValue("id"))
	if err != nil {
		reply(w, nil, err)
		return
	}
	port, _ := strconv.Atoi(r.URL.Query().Get("port"))
	hostPort, ok := j.Ports[port]
	if j.State != Running || !ok {
		writeError(w, http.StatusConflict, "no_port", "job "+j.Name+" is not running with port "+strconv.Itoa(port)+" published")
		return
	}
	ServeTunnel(w, r, "127.0.0.1:"+strconv.Itoa(hostPort))
}

func (h *handler) images(w http.ResponseWriter, r *http.Request) {
	imgs, err := h.m.Images(r.Context())
	reply(w, imgs, err)
}

// progressLine is one NDJSON line of a load or pull (app.ImageProgress).
type progressLine struct {
	Done   int64    `json:"done"`
	Total  int64    `json:"total"`
	Status string   `json:"status,omitempty"`
	Error  string   `json:"error,omitempty"`
	Tags   []string `json:"tags,omitempty"`
}

func (h *handler) load(w http.ResponseWriter, r *http.Request) {
	if h.m.rt == nil {
		reply(w, nil, ErrNoRuntime)
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxImage)
	send := h.progressWriter(w)
	tags, err := h.m.rt.LoadImage(r.Context(), body, func(done, total int64, status string) {
		send(progressLine{Done: done, Total: total, Status: status}, false)
	})
	if err != nil {
		send(progressLine{Error: err.Error()}, true)
		return
	}
	send(progressLine{Status: "loaded", Tags: tags}, true)
}

func (h *handler) pull(w http.ResponseWriter, r *http.Request) {
	if h.m.rt == nil {
		reply(w, nil, ErrNoRuntime)
		return
	}
	ref := r.URL.Query().Get("ref")
	if err := validateImage(ref); err != nil {
		reply(w, nil, err)
		return
	}
	send := h.progressWriter(w)
	err := h.m.rt.PullImage(r.Context(), ref, func(done, total int64, status string) {
		send(progressLine{Done: done, Total: total, Status: status}, false)
	})
	if err != nil {
		send(progressLine{Error: err.Error()}, true)
		return
	}
	send(progressLine{Status: "pulled " + ref, Tags: []string{ref}}, true)
}

// progressWriter starts an NDJSON reply and returns a func sending one line
// (at most a few a second, except the last).
func (h *handler) progressWriter(w http.ResponseWriter) func(progressLine, bool) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	var last int64
	return func(p progressLine, final bool) {
		now := nowMillis()
		if !final && now-last < 200 {
			return
		}
		last = now
		enc.Encode(p)
		if fl != nil {
			fl.Flush()
		}
	}
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, code := classify(err)
		writeError(w, status, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func classify(err error) (int, string) {
	var refused *RefusedError
	var busy *BusyError
	switch {
	case errors.As(err, &refused):
		return http.StatusBadRequest, "refused"
	case errors.Is(err, containers.ErrBadArchive):
		return http.StatusBadRequest, "invalid"
	case errors.As(err, &busy):
		return http.StatusConflict, "gpus_busy"
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, ErrNoRuntime), errors.Is(err, containers.ErrNoDocker):
		return http.StatusServiceUnavailable, "no_docker"
	case errors.Is(err, containers.ErrNotManaged):
		return http.StatusForbidden, "not_managed"
	}
	return http.StatusUnprocessableEntity, "failed"
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}
