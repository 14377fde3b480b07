package containers

import (
	"context"
	"io"
	"net/url"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/peerapi"
)

// ImageRoutes is the images API this machine serves to the pool
// (node/peerapi says how to add a call); ImageClient calls it.
var ImageRoutes = &peerapi.Table{}

var (
	routeImages = peerapi.Add[peerapi.None, []Image](ImageRoutes, "GET", "/v1/images", peerapi.Members, "")
	routeLoad   = peerapi.Add[peerapi.Stream, peerapi.Stream](ImageRoutes, "POST", "/v1/images/load", peerapi.NonViewers, jobs.RuleViewerLaunch)
	routePull   = peerapi.Add[peerapi.None, peerapi.Stream](ImageRoutes, "POST", "/v1/images/pull", peerapi.NonViewers, jobs.RuleViewerLaunch)
)

// ImageClient calls the images API (ImageRoutes) of one machine.
type ImageClient struct{ peerapi.Conn }

// Images lists the machine's images.
func (c ImageClient) Images(ctx context.Context) ([]Image, error) {
	return routeImages.Call(ctx, c.Conn, peerapi.Args{}, peerapi.None{})
}

// Load sends an image archive there; the reply streams NDJSON progress.
// force replaces a tag that names another image (the machine's owner
// only).
func (c ImageClient) Load(ctx context.Context, archive io.Reader, force bool) (io.ReadCloser, error) {
	return routeLoad.Open(ctx, c.Conn, peerapi.Args{Query: forceQuery(force, nil)}, archive)
}

// Pull makes the machine pull ref; the reply streams NDJSON progress.
func (c ImageClient) Pull(ctx context.Context, ref string, force bool) (io.ReadCloser, error) {
	return routePull.Open(ctx, c.Conn, peerapi.Args{Query: forceQuery(force, url.Values{"ref": {ref}})}, nil)
}

// forceQuery is q with force=1 when force.
func forceQuery(force bool, q url.Values) url.Values {
	if force {
		if q == nil {
			q = url.Values{}
		}
		q.Set("force", "1")
	}
	return q
}
