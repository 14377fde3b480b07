package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labpool/labpool/app"
)

// Series returns a node's (or one GPU's) figures over a window.
func (c *Client) Series(ctx context.Context, q app.SeriesQuery) (app.Series, error) {
	v := url.Values{"node": {q.Node}, "since": {strconv.Itoa(q.Since)}}
	if q.GPU != nil {
		v.Set("gpu", strconv.Itoa(*q.GPU))
	}
	if q.Until != 0 {
		v.Set("until", strconv.FormatInt(q.Until, 10))
	}
	var s app.Series
	return s, c.do(ctx, http.MethodGet, "/api/v1/history/series?"+v.Encode(), nil, &s)
}

// PoolHistory counts the pool's GPUs busy, idle but granted and free over
// the last since seconds.
func (c *Client) PoolHistory(ctx context.Context, since int) (app.PoolSeries, error) {
	var ps app.PoolSeries
	return ps, c.do(ctx, http.MethodGet, "/api/v1/history/pool?since="+strconv.Itoa(since), nil, &ps)
}
