package web

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/labpool/labpool/app"
)

// decodeJSON reads a request body of at most maxBody bytes into v, and
// answers 400 itself when it cannot.
func decodeJSON(w http.ResponseWriter, r *http.Request, what string, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", "decode "+what+": "+err.Error())
		return false
	}
	return true
}

func (h *handler) setRole(w http.ResponseWriter, r *http.Request) {
	var req app.RoleRequest
	if !decodeJSON(w, r, "role request", &req) {
		return
	}
	h.replyEmpty(w, h.api.SetRole(r.Context(), r.PathValue("id"), req.Role))
}

func (h *handler) invites(w http.ResponseWriter, r *http.Request) {
	v, err := h.api.Invites(r.Context())
	h.reply(w, v, err)
}

func (h *handler) createInvite(w http.ResponseWriter, r *http.Request) {
	var req app.InviteRequest
	if !decodeJSON(w, r, "invite request", &req) {
		return
	}
	v, err := h.api.CreateInvite(r.Context(), req)
	h.reply(w, v, err)
}

func (h *handler) revokeInvite(w http.ResponseWriter, r *http.Request) {
	h.replyEmpty(w, h.api.RevokeInvite(r.Context(), r.PathValue("id")))
}

// replyEmpty answers 204 on success, the error otherwise.
func (h *handler) replyEmpty(w http.ResponseWriter, err error) {
	if err != nil {
		h.reply(w, nil, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
