package jobs

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/containers"
)

// Bounds on request bodies.
const (
	maxSpec  = 1 << 20 // a launch request
	maxImage = 1 << 40 // an image archive (1 TiB)
)

// Handler serves the jobs API of this node to members; caller names who
// is asking (the device proven by the transport, and its role). Everyone
// lists and reads jobs (Env values only to a job's owner); only a job's
// owner, admins and owners act on it; viewers launch nothing; launches
// follow the machine's Policy.
func Handler(m *Manager, caller func(*http.Request) Caller) http.Handler {
	h := &handler{m: m, caller: caller}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/jobs", h.submit)
	mux.HandleFunc("GET /v1/jobs", h.list)
	mux.HandleFunc("GET /v1/jobs/{id}", h.get)
	mux.HandleFunc("POST /v1/jobs/{id}/stop", h.stop)
	mux.HandleFunc("DELETE /v1/jobs/{id}", h.remove)
	mux.HandleFunc("GET /v1/jobs/{id}/logs", h.logs)
	mux.HandleFunc("GET /v1/jobs/{id}/stats", h.stats)
	mux.HandleFunc("POST /v1/jobs/{id}/tunnel", h.tunnel)
	mux.HandleFunc("GET /v1/jobs/{id}/access", h.access)
	mux.HandleFunc("GET /v1/images", h.images)
	mux.HandleFunc("POST /v1/images/load", h.load)
	mux.HandleFunc("POST /v1/images/pull", h.pull)
	mux.HandleFunc("POST /v1/gpus/{index}/clear", h.clearGPU)
	return mux
}

type handler struct {
	m      *Manager
	caller func(*http.Request) Caller
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
	j, err := h.m.Submit(r.Context(), h.caller(r), spec)
	reply(w, j, err)
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	c := h.caller(r)
	js := h.m.List()
	for i, j := range js {
		js[i] = h.m.View(c, j)
	}
	reply(w, js, nil)
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	j, err := h.m.Get(r.PathValue("id"))
	reply(w, h.m.View(h.caller(r), j), err)
}

// authorized answers the request with a refusal, and returns false, unless
// its caller may act on the job in the path.
func (h *handler) authorized(w http.ResponseWriter, r *http.Request) (Job, bool) {
	j, err := h.m.Authorize(h.caller(r), r.PathValue("id"))
	if err != nil {
		reply(w, nil, err)
		return Job{}, false
	}
	return j, true
}

func (h *handler) stop(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorized(w, r); !ok {
		return
	}
	j, err := h.m.Stop(r.Context(), r.PathValue("id"))
	reply(w, h.m.View(h.caller(r), j), err)
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorized(w, r); !ok {
		return
	}
	if err := h.m.Remove(r.Context(), r.PathValue("id"), r.URL.Query().Get("force") == "1"); err != nil {
		reply(w, nil, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) stats(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorized(w, r); !ok {
		return
	}
	s, err := h.m.Stats(r.Context(), r.PathValue("id"))
	reply(w, s, err)
}

func (h *handler) logs(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorized(w, r); !ok {
		return
	}
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

// access answers 204 when the caller may act on the job (stop, logs,
// tunnels), the refusal naming the rule otherwise: what a tunnel is checked
// against when it is opened, before any connection rides it.
func (h *handler) access(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorized(w, r); ok {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (h *handler) tunnel(w http.ResponseWriter, r *http.Request) {
	j, ok := h.authorized(w, r)
	if !ok {
		return
	}
	port, _ := strconv.Atoi(r.URL.Query().Get("port"))
	addr, err := h.m.PortAddr(r.Context(), j, port)
	if err != nil {
		reply(w, nil, err)
		return
	}
	ServeTunnel(w, r, addr)
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

// imageRights refuses an image load or pull to callers who launch nothing
// here, and force (replacing a tag) to all but this machine's own user
// and the pool's owners.
func (h *handler) imageRights(w http.ResponseWriter, r *http.Request) (force, ok bool) {
	c := h.caller(r)
	force = isTrue(r.URL.Query().Get("force"))
	err := h.m.mayLaunch(c)
	if err == nil && force && !h.m.ownsMachine(c) {
		err = forbid("only the machine's owner replaces image tags", "force is this machine's own user's, or a pool owner's")
	}
	if err == nil && h.m.rt == nil {
		err = ErrNoRuntime
	}
	if err != nil {
		reply(w, nil, err)
		return false, false
	}
	return force, true
}

func isTrue(s string) bool { return s != "" && s != "0" && s != "false" }

func (h *handler) load(w http.ResponseWriter, r *http.Request) {
	force, ok := h.imageRights(w, r)
	if !ok {
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxImage)
	send := h.progressWriter(w)
	rights := containers.Rights{Force: force, Registry: h.m.ownsMachine(h.caller(r))}
	tags, err := h.m.rt.LoadImage(r.Context(), body, rights, func(done, total int64, status string) {
		send(progressLine{Done: done, Total: total, Status: status}, false)
	})
	if err != nil {
		send(progressLine{Error: err.Error()}, true)
		return
	}
	send(progressLine{Status: "loaded", Tags: tags}, true)
}

func (h *handler) pull(w http.ResponseWriter, r *http.Request) {
	force, ok := h.imageRights(w, r)
	if !ok {
		return
	}
	ref := r.URL.Query().Get("ref")
	if err := validateImage(ref); err != nil {
		reply(w, nil, err)
		return
	}
	send := h.progressWriter(w)
	err := h.m.rt.PullImage(r.Context(), ref, force, func(done, total int64, status string) {
		send(progressLine{Done: done, Total: total, Status: status}, false)
	})
	if err != nil {
		send(progressLine{Error: err.Error()}, true)
		return
	}
	send(progressLine{Status: "pulled " + ref, Tags: []string{ref}}, true)
}

// progressWriter starts an NDJSON reply and returns a func sending one line
// (at most a few a second, except the last and each line that ends a step:
// a load's transfer, each layer the engine loads).
func (h *handler) progressWriter(w http.ResponseWriter) func(progressLine, bool) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	var last int64
	return func(p progressLine, final bool) {
		now := nowMillis()
		stepDone := p.Total > 0 && p.Done == p.Total
		if !final && !stepDone && now-last < 200 {
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
	var taken *containers.TagTakenError
	var imgRefused *containers.RefusedError
	switch {
	case errors.As(err, &imgRefused):
		return http.StatusBadRequest, "refused"
	case errors.As(err, &refused) && refused.Forbidden:
		return http.StatusForbidden, "forbidden"
	case errors.As(err, &refused):
		return http.StatusBadRequest, "refused"
	case errors.As(err, &taken):
		return http.StatusConflict, "tag_taken"
	case errors.Is(err, ErrRunning):
		return http.StatusConflict, "running"
	case errors.Is(err, containers.ErrBadArchive):
		return http.StatusBadRequest, "invalid"
	case errors.As(err, &busy):
		return http.StatusConflict, "gpus_busy"
	case errors.Is(err, ErrNoPort):
		return http.StatusConflict, "no_port"
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

// writeError answers {code, message} with status (httperr.Write).
var writeError = httperr.Write
