package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/app"
)

// The alert calls' arguments (see app/alerts.go).

// sinceArg reads ?since=SECONDS (0 when absent: the Service's default).
func sinceArg(r *http.Request) (int, error) {
	s := r.URL.Query().Get("since")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, invalid("since must be a whole number of seconds")
	}
	return n, nil
}

// alertRuleArgs reads PUT /api/v1/alerts/rules/{id}: the ID from the path,
// the fields to change from the body.
func alertRuleArgs(r *http.Request) (app.AlertRuleRequest, error) {
	req, err := body[app.AlertRuleRequest](r)
	req.ID = r.PathValue("id")
	return req, err
}

// pinArgs reads PUT /api/v1/alerts/pins/{rule}: the rule from the path,
// the machine and whether to pin from the body.
func pinArgs(r *http.Request) (app.PinRequest, error) {
	req, err := body[app.PinRequest](r)
	req.Rule = r.PathValue("rule")
	return req, err
}

func alerts(a *app.Service, ctx context.Context, since int) ([]app.Alert, error) {
	return a.Alerts(ctx, since)
}
