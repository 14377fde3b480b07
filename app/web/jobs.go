package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// JobsAPI is the jobs part of the local API; *app.Service implements it.
type JobsAPI interface {
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
}

func (h *handler) routeJobs(mux *http.ServeMux, api JobsAPI) {
	j := &jobsHandler{handler: h, api: api}
	mux.HandleFunc("GET /api/v1/jobs", j.list)
	mux.HandleFunc("POST /api/v1/jobs", j.launch)
	mux.HandleFunc("POST /api/v1/jobs/plan", j.plan)
	mux.HandleFunc("GET /api/v1/jobs/{id}", j.get)
	mux.HandleFunc("POST /api/v1/jobs/{id}/stop", j.stop)
	mux.HandleFunc("DELETE /api/v1/jobs/{id}", j.remove)
	mux.HandleFunc("GET /api/v1/jobs/{id}/logs", j.logs)
	mux.HandleFunc("GET /api/v1/jobs/{id}/stats", j.stats)
	mux.HandleFunc("POST /api/v1/jobs/{id}/open", j.open)
	mux.HandleFunc("GET /api/v1/tunnels", j.tunnels)
	mux.HandleFunc("GET /api/v1/images", j.images)
	mux.HandleFunc("POST /api/v1/images/load", j.loadImage)
	mux.HandleFunc("POST /api/v1/images/pull", j.pullImage)
}

type jobsHandler struct {
	*handler
	api JobsAPI
}

func (j *jobsHandler) list(w http.ResponseWriter, r *http.Request) {
	v, err := j.api.Jobs(r.Context(), r.URL.Query().Get("all") != "")
	j.reply(w, v, err)
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "decode request: "+err.Error())
		return false
	}
	return true
}

func (j *jobsHandler) launch(w http.ResponseWriter, r *http.Request) {
	var req app.LaunchRequest
	if decodeBody(w, r, &req) {
		v, err := j.api.Launch(r.Context(), req)
		j.reply(w, v, err)
	}
}

func (j *jobsHandler) plan(w http.ResponseWriter, r *http.Request) {
	var req app.LaunchRequest
	if decodeBody(w, r, &req) {
		v, err := j.api.Plan(r.Context(), req)
		j.reply(w, v, err)
	}
}

func (j *jobsHandler) get(w http.ResponseWriter, r *http.Request) {
	v, err := j.api.Job(r.Context(), r.PathValue("id"))
	j.reply(w, v, err)
}

func (j *jobsHandler) stop(w http.ResponseWriter, r *http.Request) {
	v, err := j.api.StopJob(r.Context(), r.PathValue("id"))
	j.reply(w, v, err)
}

func (j *jobsHandler) remove(w http.ResponseWriter, r *http.Request) {
	if err := j.api.RemoveJob(r.Context(), r.PathValue("id")); err != nil {
		j.reply(w, nil, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (j *jobsHandler) stats(w http.ResponseWriter, r *http.Request) {
	v, err := j.api.JobStats(r.Context(), r.PathValue("id"))
	j.reply(w, v, err)
}

func (j *jobsHandler) open(w http.ResponseWriter, r *http.Request) {
	var req app.OpenRequest
	if decodeBody(w, r, &req) {
		v, err := j.api.Open(r.Context(), r.PathValue("id"), req.Port)
		j.reply(w, v, err)
	}
}

func (j *jobsHandler) tunnels(w http.ResponseWriter, r *http.Request) {
	v, err := j.api.TunnelList(r.Context())
	j.reply(w, v, err)
}

func (j *jobsHandler) images(w http.ResponseWriter, r *http.Request) {
	v, err := j.api.Images(r.Context(), r.URL.Query().Get("node"))
	j.reply(w, v, err)
}

func (j *jobsHandler) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail := -1
	if s := q.Get("tail"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			writeError(w, http.StatusBadRequest, "invalid", "tail must be a whole number of lines")
			return
		}
		tail = n
	}
	rc, err := j.api.Logs(r.Context(), r.PathValue("id"), q.Get("follow") != "", tail)
	j.stream(w, "text/plain; charset=utf-8", rc, err)
}

func (j *jobsHandler) loadImage(w http.ResponseWriter, r *http.Request) {
	// The node answers with progress while the archive is still arriving:
	// keep reading the body after the reply has started (HTTP/1.1).
	http.NewResponseController(w).EnableFullDuplex()
	force := r.URL.Query().Get("force") == "1"
	rc, err := j.api.LoadImage(r.Context(), r.URL.Query().Get("node"), r.Body, force)
	j.stream(w, "application/x-ndjson", rc, err)
}

func (j *jobsHandler) pullImage(w http.ResponseWriter, r *http.Request) {
	var req app.PullRequest
	if decodeBody(w, r, &req) {
		rc, err := j.api.PullImage(r.Context(), req)
		j.stream(w, "application/x-ndjson", rc, err)
	}
}

// stream copies a node's streamed reply to w, flushing as it comes.
func (j *jobsHandler) stream(w http.ResponseWriter, contentType string, rc io.ReadCloser, err error) {
	if err != nil {
		j.reply(w, nil, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	jobs.CopyFlushing(w, rc)
}
