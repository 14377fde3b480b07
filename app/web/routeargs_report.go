package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/app"
)

// reportReq is GET /api/v1/report?since=SECONDS&by=member|node|gpu|job
// [&until=UNIXSEC]: read from the query, so no body type reaches the
// TypeScript (the Service checks the values).
type reportReq struct{ req app.ReportRequest }

func reportArgs(r *http.Request) (reportReq, error) {
	q := r.URL.Query()
	v := reportReq{app.ReportRequest{By: q.Get("by")}}
	var err error
	if v.req.Since, err = strconv.Atoi(q.Get("since")); err != nil {
		return v, invalid("since must be a whole number of seconds")
	}
	if s := q.Get("until"); s != "" {
		if v.req.Until, err = strconv.ParseInt(s, 10, 64); err != nil {
			return v, invalid("until must be unix seconds")
		}
	}
	return v, nil
}

func report(a *app.Service, ctx context.Context, v reportReq) (app.Report, error) {
	return a.Report(ctx, v.req)
}
