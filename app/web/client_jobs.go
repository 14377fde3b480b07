package web

import (
	"context"
	"github.com/labpool/labpool/app"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/jobs"
)

// Jobs lists jobs: active ones, or all.
func (c *Client) Jobs(ctx context.Context, all bool) ([]app.Job, error) {
	var j []app.Job
	path := "/api/v1/jobs"
	if all {
		path += "?all=1"
	}
	return j, c.do(ctx, http.MethodGet, path, nil, &j)
}

// Job returns one job by ID, ID prefix or name.
func (c *Client) Job(ctx context.Context, ref string) (app.Job, error) {
	var j app.Job
	return j, c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(ref), nil, &j)
}

// Plan says where req would run.
func (c *Client) Plan(ctx context.Context, req app.LaunchRequest) (app.Plan, error) {
	var p app.Plan
	return p, c.do(ctx, http.MethodPost, "/api/v1/jobs/plan", req, &p)
}

// Launch runs a job.
func (c *Client) Launch(ctx context.Context, req app.LaunchRequest) (app.Job, error) {
	var j app.Job
	return j, c.do(ctx, http.MethodPost, "/api/v1/jobs", req, &j)
}

// StopJob stops a job.
func (c *Client) StopJob(ctx context.Context, ref string) (app.Job, error) {
	var j app.Job
	return j, c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(ref)+"/stop", nil, &j)
}

// RemoveJob removes a job's container (a running one only with force).
func (c *Client) RemoveJob(ctx context.Context, req app.RemoveRequest) error {
	path := "/api/v1/jobs/" + url.PathEscape(req.Ref)
	if req.Force {
		path += "?force=1"
	}
	return c.do(ctx, http.MethodDelete, path, nil, nil)
}

// JobStats returns a job's resource use.
func (c *Client) JobStats(ctx context.Context, ref string) (jobs.Stats, error) {
	var s jobs.Stats
	return s, c.do(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(ref)+"/stats", nil, &s)
}

// Open opens (or returns) a tunnel to a job's container port.
func (c *Client) Open(ctx context.Context, ref string, port int) (app.Tunnel, error) {
	var t app.Tunnel
	return t, c.do(ctx, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(ref)+"/open", app.OpenRequest{Port: port}, &t)
}

// TunnelList returns the open tunnels.
func (c *Client) TunnelList(ctx context.Context) ([]app.Tunnel, error) {
	var t []app.Tunnel
	return t, c.do(ctx, http.MethodGet, "/api/v1/tunnels", nil, &t)
}

// Images lists a node's images ("" = this machine).
func (c *Client) Images(ctx context.Context, node string) ([]containers.Image, error) {
	var i []containers.Image
	return i, c.do(ctx, http.MethodGet, "/api/v1/images?node="+url.QueryEscape(node), nil, &i)
}

// Logs streams a job's logs.
func (c *Client) Logs(ctx context.Context, ref string, follow bool, tail int) (io.ReadCloser, error) {
	q := url.Values{"tail": {strconv.Itoa(tail)}}
	if follow {
		q.Set("follow", "1")
	}
	return c.streamReq(ctx, http.MethodGet, "/api/v1/jobs/"+url.PathEscape(ref)+"/logs?"+q.Encode(), nil, "")
}

// LoadImage sends an image archive to node; the reply is NDJSON progress.
func (c *Client) LoadImage(ctx context.Context, node string, archive io.Reader, force bool) (io.ReadCloser, error) {
	return c.streamReq(ctx, http.MethodPost, "/api/v1/images/load?node="+url.QueryEscape(node)+forceParam(force), archive, "application/x-tar")
}

// PullImage makes node pull ref; the reply is NDJSON progress.
func (c *Client) PullImage(ctx context.Context, req app.PullRequest) (io.ReadCloser, error) {
	body, err := jsonBody(req)
	if err != nil {
		return nil, err
	}
	return c.streamReq(ctx, http.MethodPost, "/api/v1/images/pull", body, "application/json")
}

func (c *Client) streamReq(ctx context.Context, method, path string, body io.Reader, contentType string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://labpool"+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		return nil, c.wrap(err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, ReadError(resp)
	}
	return resp.Body, nil
}

func forceParam(force bool) string {
	if force {
		return "&force=1"
	}
	return ""
}
