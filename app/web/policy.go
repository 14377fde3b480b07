package web

import (
	"context"
	"net/http"

	"github.com/labpool/labpool/app"
)

// PolicyAPI is the machine-policy part of the local API; *app.Service
// implements it.
type PolicyAPI interface {
	Policy(ctx context.Context) (app.Policy, error)
	SetPolicy(ctx context.Context, u app.PolicyUpdate) (app.Policy, error)
}

// routePolicy serves GET and PUT /api/v1/policy. Only the unix socket may
// reach them: the guard of `labpool web` refuses the path ("local_only").
func (h *handler) routePolicy(mux *http.ServeMux, api PolicyAPI) {
	mux.HandleFunc("GET /api/v1/policy", func(w http.ResponseWriter, r *http.Request) {
		p, err := api.Policy(r.Context())
		h.reply(w, p, err)
	})
	mux.HandleFunc("PUT /api/v1/policy", func(w http.ResponseWriter, r *http.Request) {
		var u app.PolicyUpdate
		if !decodeBody(w, r, &u) {
			return
		}
		p, err := api.SetPolicy(r.Context(), u)
		h.reply(w, p, err)
	})
}
