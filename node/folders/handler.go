package folders

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strconv"
)

// Info is what members see of a share: never its path here.
type Info struct {
	Name      string   `json:"name"`
	Mode      string   `json:"mode"` // "ro" or "rw"
	SizeBytes int64    `json:"size_bytes"`
	Files     int      `json:"files"`
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

// Handler serves listings of this machine's shares to members; member
// names the device asking.
func Handler(r *Registry, member func(*http.Request) string) http.Handler {
	mux := http.NewServeMux()
	// reading serves a request on the share it names, opened read-only for
	// the member asking.
	reading := func(serve func(http.ResponseWriter, *http.Request, *os.Root)) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			root, _, err := r.OpenRoot(req.PathValue("name"), member(req), false)
			if err != nil {
				reply(w, nil, err)
				return
			}
			defer root.Close()
			serve(w, req, root)
		}
	}
	mux.HandleFunc("GET /v1/folders/{name}/ls", reading(func(w http.ResponseWriter, req *http.Request, root *os.Root) {
		es, err := ReadDir(root, req.URL.Query().Get("path"))
		reply(w, es, err)
	}))
	mux.HandleFunc("GET /v1/folders/{name}/walk", reading(func(w http.ResponseWriter, req *http.Request, root *os.Root) {
		// The listing streams while the tree is read; an error before the
		// first item still gets its status.
		var enc *WalkEncoder
		err := WalkFunc(root, req.URL.Query().Get("path"), func(it FileMeta) error {
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
	}))
	mux.HandleFunc("GET /v1/folders/{name}/sums", reading(func(w http.ResponseWriter, req *http.Request, root *os.Root) {
		sums, err := FileSums(root, req.URL.Query().Get("path"))
		reply(w, sums, err)
	}))
	mux.HandleFunc("GET /v1/folders/{name}/read", reading(func(w http.ResponseWriter, req *http.Request, root *os.Root) {
		q := req.URL.Query()
		off, err1 := strconv.ParseInt(q.Get("off"), 10, 64)
		n, err2 := strconv.ParseInt(q.Get("len"), 10, 64)
		if err1 != nil || err2 != nil {
			reply(w, nil, fmt.Errorf("%w: off and len must be numbers", ErrBadPath))
			return
		}
		rc, err := OpenRange(root, q.Get("path"), off, n)
		if err != nil {
			reply(w, nil, err)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		io.Copy(w, rc)
	}))
	mux.HandleFunc("GET /v1/folders/{name}/blocks", reading(func(w http.ResponseWriter, req *http.Request, root *os.Root) {
		q := req.URL.Query()
		first, err1 := strconv.Atoi(q.Get("first"))
		n, err2 := strconv.Atoi(q.Get("n"))
		if err1 != nil || err2 != nil {
			reply(w, nil, fmt.Errorf("%w: first and n must be numbers", ErrBadPath))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		WriteBlocks(root, q.Get("path"), first, n, w)
	}))
	mux.HandleFunc("POST /v1/folders/{name}/bundle", reading(func(w http.ResponseWriter, req *http.Request, root *os.Root) {
		var body struct {
			Paths []string `json:"paths"`
		}
		if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&body); err != nil {
			reply(w, nil, fmt.Errorf("%w: decode the bundle request", ErrBadPath))
			return
		}
		if len(body.Paths) > maxBundle {
			reply(w, nil, fmt.Errorf("%w: too many files in one bundle", ErrBadPath))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		WriteBundle(root, body.Paths, w)
	}))
	mux.HandleFunc("GET /v1/folders", func(w http.ResponseWriter, req *http.Request) {
		who := member(req)
		out := []Info{}
		for _, s := range r.List() {
			if who == "" || len(s.Members) == 0 || slices.Contains(s.Members, who) {
				out = append(out, Info{Name: s.Name, Mode: s.Mode(), Members: s.Members})
			}
		}
		reply(w, out, nil)
	})
	return mux
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		status, code := http.StatusInternalServerError, "failed"
		switch {
		case errors.Is(err, ErrBadPath):
			status, code = http.StatusBadRequest, "bad_path"
		case errors.Is(err, ErrNoShare), errors.Is(err, ErrNotMember):
			status, code = http.StatusNotFound, "no_share" // a non-member learns nothing more
		case errors.Is(err, ErrReadOnly):
			status, code = http.StatusForbidden, "read_only"
		case errors.Is(err, fs.ErrNotExist):
			status, code = http.StatusNotFound, "not_found"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"code": code, "message": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
