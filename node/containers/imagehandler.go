package containers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/peerapi"
)

// maxImage bounds an image archive's size (1 TiB).
const maxImage = 1 << 40

// Launchers says who may bring images to this machine: those who may
// launch jobs here (*jobs.Manager, from the machine's policy), and who
// speaks for the machine (its own user, the pool's owners).
type Launchers interface {
	MayLaunch(c jobs.Caller) error
	OwnsMachine(c jobs.Caller) bool
}

// ImageStore is what the images API calls (*Runtime implements it).
type ImageStore interface {
	Images(ctx context.Context) ([]Image, error)
	LoadImage(ctx context.Context, archive io.Reader, rights Rights, progress Progress) ([]string, error)
	PullImage(ctx context.Context, ref string, force bool, progress Progress) error
}

var _ ImageStore = (*Runtime)(nil)

// ImageHandler serves the images API of this node: GET /v1/images lists
// the engine's images to members; POST /v1/images/load and
// /v1/images/pull are for who may launch here, and replacing a tag
// (force) for the machine's owner only. rt nil (or a nil *Runtime): no
// engine here.
func ImageHandler(rt ImageStore, who Launchers, caller func(*http.Request) jobs.Caller) *peerapi.Mux {
	if r, ok := rt.(*Runtime); ok && r == nil {
		rt = nil
	}
	h := &imageHandler{rt: rt, who: who, caller: caller}
	return ImageRoutes.Mux(map[peerapi.Spec]http.HandlerFunc{
		routeImages.Spec: h.images,
		routeLoad.Spec:   h.load,
		routePull.Spec:   h.pull,
	})
}

type imageHandler struct {
	rt     ImageStore
	who    Launchers
	caller func(*http.Request) jobs.Caller
}

func (h *imageHandler) images(w http.ResponseWriter, r *http.Request) {
	if h.rt == nil {
		jobs.Reply(w, nil, jobs.ErrNoRuntime)
		return
	}
	imgs, err := h.rt.Images(r.Context())
	if imgs == nil {
		imgs = []Image{}
	}
	jobs.Reply(w, imgs, err)
}

// progressLine is one NDJSON line of a load or pull (app.ImageProgress).
type progressLine struct {
	Done   int64    `json:"done"`
	Total  int64    `json:"total"`
	Status string   `json:"status,omitempty"`
	Error  string   `json:"error,omitempty"`
	Tags   []string `json:"tags,omitempty"`
}

// rights refuses an image load or pull to callers who launch nothing
// here, and force (replacing a tag) to all but this machine's own user
// and the pool's owners.
func (h *imageHandler) rights(w http.ResponseWriter, r *http.Request) (Rights, bool) {
	c := h.caller(r)
	force := isTrue(r.URL.Query().Get("force"))
	owns := h.who.OwnsMachine(c)
	err := h.who.MayLaunch(c)
	if err == nil && force && !owns {
		err = &jobs.RefusedError{Rule: "only the machine's owner replaces image tags", Detail: "force is this machine's own user's, or a pool owner's", Forbidden: true}
	}
	if err == nil && h.rt == nil {
		err = jobs.ErrNoRuntime
	}
	if err != nil {
		jobs.Reply(w, nil, err)
		return Rights{}, false
	}
	return Rights{Force: force, AnyName: owns, Loader: c.ID}, true
}

func isTrue(s string) bool { return s != "" && s != "0" && s != "false" }

func (h *imageHandler) load(w http.ResponseWriter, r *http.Request) {
	rights, ok := h.rights(w, r)
	if !ok {
		return
	}
	body := http.MaxBytesReader(w, r.Body, maxImage)
	send := progressWriter(w)
	tags, err := h.rt.LoadImage(r.Context(), body, rights, func(done, total int64, status string) {
		send(progressLine{Done: done, Total: total, Status: status}, false)
	})
	if err != nil {
		send(progressLine{Error: err.Error()}, true)
		return
	}
	send(progressLine{Status: "loaded", Tags: tags}, true)
}

func (h *imageHandler) pull(w http.ResponseWriter, r *http.Request) {
	rights, ok := h.rights(w, r)
	if !ok {
		return
	}
	ref := r.URL.Query().Get("ref")
	if err := jobs.ValidateImage(ref); err != nil {
		jobs.Reply(w, nil, err)
		return
	}
	send := progressWriter(w)
	err := h.rt.PullImage(r.Context(), ref, rights.Force, func(done, total int64, status string) {
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
func progressWriter(w http.ResponseWriter) func(progressLine, bool) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	var last int64
	return func(p progressLine, final bool) {
		now := time.Now().UnixMilli()
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
