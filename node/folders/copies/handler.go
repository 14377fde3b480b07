package copies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/peerapi"
)

// request asks a receiving machine to pull from a member's folder (the
// body of POST /v1/transfers).
type request struct {
	SrcNode   string    `json:"src_node"`
	SrcFolder string    `json:"src_folder"`
	SrcPath   string    `json:"src_path"`
	SrcName   string    `json:"src_name"`
	DstFolder string    `json:"dst_folder"`
	DstPath   string    `json:"dst_path"`
	Label     [2]string `json:"label"` // SRC and DST as the user wrote them
	// Grant is the asking member's authority to read the source
	// (folders.Grant, encoded): the receiver forwards it to the source.
	Grant string `json:"grant"`
}

// Handler lets members start copies into this machine's folders and
// follow them (Routes):
//
//	POST /v1/transfers       -> Transfer, the copy started
//	GET  /v1/transfers/{id}  -> Transfer (?wait=DURATION: once it ends)
//
// caller is the device TLS proved for a request, with its role.
func (r *Receiver) Handler(caller func(*http.Request) folders.Caller) *peerapi.Mux {
	start := func(w http.ResponseWriter, req *http.Request) {
		var tr request
		if err := json.NewDecoder(io.LimitReader(req.Body, 64<<10)).Decode(&tr); err != nil {
			httperr.Write(w, http.StatusBadRequest, "invalid", "decode the copy request")
			return
		}
		t, err := r.receive(req.Context(), tr, caller(req))
		writeJSON(w, t, err)
	}
	get := func(w http.ResponseWriter, req *http.Request) {
		wait, _ := time.ParseDuration(req.URL.Query().Get("wait")) // none, if not a duration
		t, err := r.wait(req.Context(), req.PathValue("id"), wait)
		writeJSON(w, t, err)
	}
	return Routes.Mux(map[peerapi.Spec]http.HandlerFunc{routeStart.Spec: start, routeGet.Spec: get})
}

// receive starts pulling tr into one of this machine's folders for the
// member who asks, on that member's authority: the member must be allowed
// to write the destination here, and signed the grant this machine
// forwards to the source, which checks the member's right to read there.
func (r *Receiver) receive(ctx context.Context, tr request, who folders.Caller) (Transfer, error) {
	g, err := folders.DecodeGrant(tr.Grant)
	switch {
	case err != nil:
		return Transfer{}, err
	case g.Receiver != r.cfg.Self:
		return Transfer{}, fmt.Errorf("%w: it names another receiver", folders.ErrGrant)
	case g.Src != tr.SrcNode || g.Folder != tr.SrcFolder || g.Path != tr.SrcPath:
		return Transfer{}, fmt.Errorf("%w: it names another source than the copy", folders.ErrGrant)
	}
	dst, err := r.deps.Folders.OpenReceiving(tr.DstFolder, who, g)
	if err != nil {
		return Transfer{}, err
	}
	hc, err := r.deps.Dialer.NodeDataClient(tr.SrcNode)
	if err != nil {
		dst.Close()
		return Transfer{}, err
	}
	t := r.newTransfer(tr.Label)
	src := folders.HTTPSource{Client: hc, Folder: tr.SrcFolder, Grant: tr.Grant}
	pull := &Pull{Src: src, SrcPath: tr.SrcPath, SrcName: tr.SrcName, Dst: dst.Root, DstPath: tr.DstPath, Owner: dst.Owner}
	started, err := r.start(ctx, t, pull, who.ID, tr.SrcNode, func(ctx context.Context) {
		dst.Close()
		if pull.Changed() && r.deps.Changed != nil {
			r.deps.Changed(ctx, tr.DstFolder) // its size and file count changed
		}
	})
	if err != nil {
		dst.Close()
		return Transfer{}, err
	}
	return started, nil
}

// writeJSON writes v, or err as {code, message} with the status a refusal
// of the folders it names calls for.
func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		httperr.Write(w, status(err), "copy", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// status is the HTTP status of a refused copy: a non-member learns no more
// of a share than that it is not found.
func status(err error) int {
	switch {
	case errors.Is(err, folders.ErrNoShare), errors.Is(err, folders.ErrNotMember):
		return http.StatusNotFound
	case errors.Is(err, folders.ErrReadOnly), errors.Is(err, folders.ErrGrant), errors.Is(err, folders.ErrViewer),
		errors.Is(err, folders.ErrNoRole), errors.Is(err, folders.ErrRefusedPath):
		return http.StatusForbidden
	}
	return http.StatusUnprocessableEntity
}
