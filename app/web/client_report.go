package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labpool/labpool/app"
)

// Report returns the pool's report over the window req asks for.
func (c *Client) Report(ctx context.Context, req app.ReportRequest) (app.Report, error) {
	var r app.Report
	q := url.Values{"since": {strconv.Itoa(req.Since)}, "by": {req.By}}
	if req.Until != 0 {
		q.Set("until", strconv.FormatInt(req.Until, 10))
	}
	return r, c.do(ctx, http.MethodGet, "/api/v1/report?"+q.Encode(), nil, &r)
}
