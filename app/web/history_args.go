package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/app"
)

// The arguments of the history calls, read from the query.

// seriesReq is GET /api/v1/history/series's query (an unexported type of
// this package: no request body for the TypeScript generator).
type seriesReq struct{ q app.SeriesQuery }

func seriesArgs(r *http.Request) (seriesReq, error) {
	v := r.URL.Query()
	q := app.SeriesQuery{Node: v.Get("node")}
	if s := v.Get("gpu"); s != "" {
		i, err := strconv.Atoi(s)
		if err != nil {
			return seriesReq{}, invalid("gpu must be a GPU index")
		}
		q.GPU = &i
	}
	since, err := strconv.Atoi(v.Get("since"))
	if err != nil {
		return seriesReq{}, invalid("since must be a whole number of seconds")
	}
	q.Since = since
	if s := v.Get("until"); s != "" {
		if q.Until, err = strconv.ParseInt(s, 10, 64); err != nil {
			return seriesReq{}, invalid("until must be a unix time in seconds")
		}
	}
	return seriesReq{q}, nil
}

func series(a *app.Service, ctx context.Context, v seriesReq) (app.Series, error) {
	return a.Series(ctx, v.q)
}

type poolHistoryReq struct{ since int }

func poolHistoryArgs(r *http.Request) (poolHistoryReq, error) {
	since, err := strconv.Atoi(r.URL.Query().Get("since"))
	if err != nil {
		return poolHistoryReq{}, invalid("since must be a whole number of seconds")
	}
	return poolHistoryReq{since}, nil
}

func poolHistory(a *app.Service, ctx context.Context, v poolHistoryReq) (app.PoolSeries, error) {
	return a.PoolHistory(ctx, v.since)
}
