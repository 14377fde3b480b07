package folders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/internal/procs"
	"github.com/labpool/labpool/node/peerapi"
)

// Info is what members see of a share: never its path here.
type Info struct {
	Name      string   `json:"name"`
	Mode      string   `json:"mode"` // "ro" or "rw"
	SizeBytes int64    `json:"size_bytes"`
	Files     int      `json:"files"`
	AtLeast   bool     `json:"size_at_least,omitempty"` // the measure stopped at its limit
	Members   []string `json:"members,omitempty"`
	Removed   bool     `json:"removed,omitempty"`
}

// Mode is "rw" for a read-write share, "ro" otherwise.
func (s Share) Mode() string {
	if s.ReadWrite {
		return "rw"
	}
	return "ro"
}

// Access is what the handler learns from the daemon about who asks.
type Access struct {
	// Caller is the device proven by TLS and its role in the pool.
	Caller func(*http.Request) Caller
	// Role is a device's role in the pool ("" = not a member), for the
	// member who signed a copy's grant and the devices a change of a
	// share's members names.
	Role func(id string) string
	// Changed tells the pool of a share whose members changed (its
	// replicated record); an error takes the change back. Nil: nothing to
	// tell.
	Changed func(ctx context.Context, s Share) (Info, error)
}

// Handler serves this machine's shares to the pool. Browsing (ls and the
// list of shares) checks the caller; reading a copy's data (walk, sums,
// read, blocks, bundle) checks the grant the request carries, that is the
// rights of the member who asked for the copy, whoever receives it.
func Handler(r *Registry, a Access) *peerapi.Mux {
	h := &handler{r: r, a: a}
	return Routes.Mux(map[peerapi.Spec]http.HandlerFunc{
		routeList.Spec:    h.list,
		routeLs.Spec:      h.ls,
		routeWalk.Spec:    h.reading(h.walk),
		routeSums.Spec:    h.reading(h.sums),
		routeRead.Spec:    h.reading(h.read),
		routeBlocks.Spec:  h.reading(h.blocks),
		routeBundle.Spec:  h.reading(h.bundle),
		routeMembers.Spec: h.members,
	})
}

// handler serves the shares of r to the callers a names.
type handler struct {
	r *Registry
	a Access
}

// reading serves a request of a copy's receiver on the share it names, on
// the authority of the grant it carries.
func (h *handler) reading(serve func(http.ResponseWriter, *http.Request, *Opened)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		g, err := DecodeGrant(req.Header.Get(GrantHeader))
		if err != nil {
			reply(w, nil, err)
			return
		}
		o, err := h.r.OpenGranted(req.PathValue("name"), h.a.Caller(req), g, h.a.Role)
		if err != nil {
			reply(w, nil, err)
			return
		}
		defer o.Close()
		defer procs.Acquire()() // a copy's receiver asks in parallel streams
		serve(w, req, o)
	}
}

// at is the path the request names, mapped into the share.
func at(o *Opened, req *http.Request) (string, error) { return o.Path(req.URL.Query().Get("path")) }

func (h *handler) list(w http.ResponseWriter, req *http.Request) {
	who := h.a.Caller(req)
	out := []Info{}
	for _, s := range h.r.List() {
		if h.r.allow(s, who, Browse) == nil {
			out = append(out, Info{Name: s.Name, Mode: s.Mode(), Members: s.Members})
		}
	}
	reply(w, out, nil)
}

func (h *handler) ls(w http.ResponseWriter, req *http.Request) {
	o, err := h.r.OpenFor(req.PathValue("name"), h.a.Caller(req), Browse)
	if err != nil {
		reply(w, nil, err)
		return
	}
	defer o.Close()
	p, err := at(o, req)
	if err != nil {
		reply(w, nil, err)
		return
	}
	es, err := ReadDir(o.Root, p)
	reply(w, es, err)
}

// walk streams the listing while the tree is read; an error before the
// first item still gets its status.
func (h *handler) walk(w http.ResponseWriter, req *http.Request, o *Opened) {
	p, err := at(o, req)
	if err != nil {
		reply(w, nil, err)
		return
	}
	var enc *WalkEncoder
	err = WalkFunc(o.Root, p, func(it FileMeta) error {
		if enc == nil {
			w.Header().Set("Content-Type", WalkContentType)
			enc = NewWalkEncoder(w)
		}
		return enc.Add(it)
	})
	if enc == nil {
		reply(w, nil, err)
		return
	}
	enc.End(err)
}

func (h *handler) sums(w http.ResponseWriter, req *http.Request, o *Opened) {
	p, err := at(o, req)
	if err != nil {
		reply(w, nil, err)
		return
	}
	sums, err := FileSums(o.Root, p)
	reply(w, sums, err)
}

func (h *handler) read(w http.ResponseWriter, req *http.Request, o *Opened) {
	q := req.URL.Query()
	off, err1 := strconv.ParseInt(q.Get("off"), 10, 64)
	n, err2 := strconv.ParseInt(q.Get("len"), 10, 64)
	if err1 != nil || err2 != nil {
		reply(w, nil, fmt.Errorf("%w: off and len must be numbers", ErrBadPath))
		return
	}
	p, err := at(o, req)
	if err != nil {
		reply(w, nil, err)
		return
	}
	rc, err := OpenRange(o.Root, p, off, n)
	if err != nil {
		reply(w, nil, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	io.Copy(w, rc)
}

func (h *handler) blocks(w http.ResponseWriter, req *http.Request, o *Opened) {
	q := req.URL.Query()
	first, err1 := strconv.Atoi(q.Get("first"))
	n, err2 := strconv.Atoi(q.Get("n"))
	if err1 != nil || err2 != nil {
		reply(w, nil, fmt.Errorf("%w: first and n must be numbers", ErrBadPath))
		return
	}
	p, err := at(o, req)
	if err != nil {
		reply(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	WriteBlocks(o.Root, p, first, n, q.Get("check") == BlockCheckName, w)
}

func (h *handler) bundle(w http.ResponseWriter, req *http.Request, o *Opened) {
	var body bundleRequest
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&body); err != nil {
		reply(w, nil, fmt.Errorf("%w: decode the bundle request", ErrBadPath))
		return
	}
	if len(body.Paths) > maxBundle {
		reply(w, nil, fmt.Errorf("%w: too many files in one bundle", ErrBadPath))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	writeBundle(o.Root, body.Paths, o.Path, w)
}

// members serves a change of a share's members asked from another
// machine: the registry checks who asks, by the device TLS proved.
func (h *handler) members(w http.ResponseWriter, req *http.Request) {
	var ch MembersChange
	dec := json.NewDecoder(io.LimitReader(req.Body, 64<<10))
	dec.DisallowUnknownFields() // a claim the body makes (a sharer) is no field: refused, not ignored
	if err := dec.Decode(&ch); err != nil {
		reply(w, nil, fmt.Errorf("%w: decode the change: %v", ErrBadMembers, err))
		return
	}
	info, err := ChangeMembers(req.Context(), h.r, h.a, h.a.Caller(req), req.PathValue("name"), ch)
	reply(w, info, err)
}

// ChangeMembers changes the members of the share name for who, checks
// that every device or person it adds is in the pool, and tells the pool
// (a.Changed), taking the change back if the pool cannot be told. The
// peer call and this machine's own user both change members through it.
func ChangeMembers(ctx context.Context, r *Registry, a Access, who Caller, name string, ch MembersChange) (Info, error) {
	known := func(string) bool { return true }
	if a.Role != nil {
		known = func(id string) bool { return a.Role(id) != "" || (r.cfg.IsPerson != nil && r.cfg.IsPerson(id)) }
	}
	prev, s, err := r.ChangeMembers(name, who, ch, known)
	if err != nil {
		return Info{}, err
	}
	info := Info{Name: s.Name, Mode: s.Mode(), Members: s.Members}
	if a.Changed != nil {
		if info, err = a.Changed(ctx, s); err != nil {
			if rerr := r.Restore(prev); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return Info{}, fmt.Errorf("change the members of %s: %w", name, err)
		}
	}
	return info, nil
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, code := http.StatusInternalServerError, "failed"
		switch {
		case errors.Is(err, ErrBadPath):
			status, code = http.StatusBadRequest, "bad_path"
		case errors.Is(err, ErrBadMembers):
			status, code = http.StatusBadRequest, "invalid"
		case errors.Is(err, ErrNoShare), errors.Is(err, ErrNotMember):
			status, code = http.StatusNotFound, "no_share" // a non-member learns nothing more
		case errors.Is(err, ErrReadOnly):
			status, code = http.StatusForbidden, "read_only"
		case errors.Is(err, ErrGrant), errors.Is(err, ErrViewer), errors.Is(err, ErrNoRole), errors.Is(err, ErrRefusedPath),
			errors.Is(err, ErrMembers):
			status, code = http.StatusForbidden, "forbidden"
		case errors.Is(err, fs.ErrNotExist):
			status, code = http.StatusNotFound, "not_found"
		}
		httperr.Write(w, status, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
