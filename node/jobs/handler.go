package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/peerapi"
)

// maxSpec bounds a launch request's body.
const maxSpec = 1 << 20

// Handler serves the jobs API of this node to members; caller names who
// is asking (the device proven by the transport, and its role). Everyone
// lists and reads jobs (Env values only to a job's owner); only a job's
// owner, admins and owners act on it; viewers launch nothing; launches
// follow the machine's Policy. (The images API is the container engine's:
// containers.ImageHandler.)
func Handler(m *Manager, caller func(*http.Request) Caller) *peerapi.Mux {
	h := &handler{m: m, caller: caller}
	return Routes.Mux(map[peerapi.Spec]http.HandlerFunc{
		routeSubmit.Spec:   h.submit,
		routeList.Spec:     h.list,
		routeGet.Spec:      h.get,
		routeStop.Spec:     h.stop,
		routeRemove.Spec:   h.remove,
		routeLogs.Spec:     h.logs,
		routeStats.Spec:    h.stats,
		routeTunnel.Spec:   h.tunnel,
		routeAccess.Spec:   h.access,
		routeClearGPU.Spec: h.clearGPU,
		routeHandover.Spec: h.handover,
	})
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
	j, err := h.m.SubmitProven(r.Context(), h.caller(r), spec, r.Header.Get(ProofHeader))
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

// handover answers a job's home offering it the job (handover.go): an
// OfferAnswer, accepted or refused with the rule; an error is no answer.
func (h *handler) handover(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 2*maxSpec+1))
	if err != nil {
		reply(w, nil, fmt.Errorf("read the offer: %w", err))
		return
	}
	o, err := DecodeOffer(b)
	if err == nil && o.Job.ID != r.PathValue("id") {
		err = refuse(RuleHandoverForm, "the offer names job %q, the path %q", o.Job.ID, r.PathValue("id"))
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	ans, err := h.m.AcceptOffer(r.Context(), h.caller(r), o)
	reply(w, ans, err)
}

// Reply answers v as JSON, or err as {code, message} with the status its
// kind calls for (a refusal, a conflict, no such job...).
func Reply(w http.ResponseWriter, v any, err error) { reply(w, v, err) }

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
	var coded interface{ HTTPStatus() (int, string) }
	switch {
	case errors.As(err, &coded):
		return coded.HTTPStatus()
	case errors.As(err, &refused) && refused.Forbidden:
		return http.StatusForbidden, "forbidden"
	case errors.As(err, &refused):
		return http.StatusBadRequest, "refused"
	case errors.Is(err, ErrRunning):
		return http.StatusConflict, "running"
	case errors.As(err, &busy):
		return http.StatusConflict, "gpus_busy"
	case errors.Is(err, ErrNoPort):
		return http.StatusConflict, "no_port"
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, ErrNoRuntime):
		return http.StatusServiceUnavailable, "no_docker"
	}
	return http.StatusUnprocessableEntity, "failed"
}

// writeError answers {code, message} with status (httperr.Write).
var writeError = httperr.Write
