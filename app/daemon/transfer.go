package daemon

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/transport"
)

// transferRequest asks a receiving machine to pull from a member's folder.
type transferRequest struct {
	SrcNode   string    `json:"src_node"`
	SrcFolder string    `json:"src_folder"`
	SrcPath   string    `json:"src_path"`
	SrcName   string    `json:"src_name"`
	DstFolder string    `json:"dst_folder"`
	DstPath   string    `json:"dst_path"`
	Label     [2]string `json:"label"` // SRC and DST as the user wrote them
}

// transfers runs the copies this machine receives, and remembers the
// copies started through it.
type transfers struct {
	mu      sync.Mutex // guards list, ended, started
	list    map[string]*app.Transfer
	ended   map[string]chan struct{} // closed when the copy ends
	started []startedTransfer        // newest last
}

// startedTransfer is a copy started through this daemon, with its state as
// last seen. The list is kept in the settings, so that the window lists
// copies across restarts of either.
type startedTransfer struct {
	Node string       `json:"node"`
	ID   string       `json:"id"`
	Last app.Transfer `json:"last"`
}

// settingTransfers keeps the copies started through this machine.
const settingTransfers = "transfers"

// loadTransfers reads the list of started copies.
func (d *Daemon) loadTransfers(ctx context.Context) {
	v, ok, err := d.db.Setting(ctx, settingTransfers)
	if err != nil || !ok {
		return
	}
	var list []startedTransfer
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		d.log.Warn("unreadable list of copies: starting a new one", "err", err)
		return
	}
	d.xfers.mu.Lock()
	d.xfers.started = list
	d.xfers.mu.Unlock()
}

// saveTransfers writes the list of started copies.
func (d *Daemon) saveTransfers(ctx context.Context) {
	d.xfers.mu.Lock()
	b, err := json.Marshal(d.xfers.started)
	d.xfers.mu.Unlock()
	if err == nil {
		err = d.db.SetSetting(ctx, settingTransfers, string(b))
	}
	if err != nil {
		d.log.Warn("save the list of copies", "err", err)
	}
}

// ended reports whether a copy's state is final.
func ended(t app.Transfer) bool { return t.State == "done" || t.State == "failed" }

// httpSource reads a member's shared folder over the pool's transport.
type httpSource struct {
	hc     *http.Client
	folder string
}

func (s httpSource) get(ctx context.Context, op string, q url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://node/v1/folders/"+url.PathEscape(s.folder)+"/"+op+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, sourceError(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e app.Error
		json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e)
		if e.Message == "" {
			e.Message = resp.Status
		}
		return nil, fmt.Errorf("%s", e.Message)
	}
	return resp, nil
}

func (s httpSource) decode(ctx context.Context, op string, q url.Values, v any) error {
	resp, err := s.get(ctx, op, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(v)
}

// sourceError says that the sending machine could not be reached, without
// the request's URL.
func sourceError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("the sending machine did not answer: %w", err)
}

// Walk implements folders.Source.
func (s httpSource) Walk(ctx context.Context, p string) ([]folders.FileMeta, error) {
	resp, err := s.get(ctx, "walk", url.Values{"path": {p}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return folders.DecodeWalk(resp.Body)
}

// Sums implements folders.Source.
func (s httpSource) Sums(ctx context.Context, p string) (folders.Sums, error) {
	var sums folders.Sums
	return sums, s.decode(ctx, "sums", url.Values{"path": {p}}, &sums)
}

// Bundle implements folders.Source.
func (s httpSource) Bundle(ctx context.Context, paths []string) (io.ReadCloser, error) {
	body, err := json.Marshal(map[string][]string{"paths": paths})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://node/v1/folders/"+url.PathEscape(s.folder)+"/bundle", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, sourceError(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var e app.Error
		json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e)
		return nil, fmt.Errorf("bundle: %s %s", resp.Status, e.Message)
	}
	return resp.Body, nil
}

// Blocks implements folders.Source.
func (s httpSource) Blocks(ctx context.Context, p string, first, n int) (io.ReadCloser, error) {
	resp, err := s.get(ctx, "blocks", url.Values{"path": {p}, "first": {strconv.Itoa(first)}, "n": {strconv.Itoa(n)}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Read implements folders.Source.
func (s httpSource) Read(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	resp, err := s.get(ctx, "read", url.Values{"path": {p}, "off": {strconv.FormatInt(off, 10)}, "len": {strconv.FormatInt(n, 10)}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func newTransferID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// start runs pull in the background, recording its progress as id.
func (d *Daemon) startTransfer(ctx context.Context, t *app.Transfer, pull *folders.Pull, done func()) {
	d.xfers.mu.Lock()
	if d.xfers.list == nil {
		d.xfers.list = map[string]*app.Transfer{}
	}
	d.xfers.list[t.ID] = t
	if d.xfers.ended == nil {
		d.xfers.ended = map[string]chan struct{}{}
	}
	ended := make(chan struct{})
	d.xfers.ended[t.ID] = ended
	d.xfers.mu.Unlock()
	pull.OnProgress = func(p folders.Progress) {
		d.xfers.mu.Lock()
		t.Progress = p
		d.xfers.mu.Unlock()
	}
	go func() {
		defer done()
		p, err := pull.Run(ctx)
		now := time.Now().UTC()
		d.xfers.mu.Lock()
		t.Progress, t.Finished, t.State = p, &now, "done"
		if err != nil {
			t.State, t.Error = "failed", err.Error()
			if p.Done > 0 && !errors.Is(err, context.Canceled) && !errors.Is(err, folders.ErrFull) {
				t.Error += " (what arrived is kept: the same copy resumes from there)"
			}
		}
		d.xfers.mu.Unlock()
		close(ended)
		d.log.Info("copy ended", "id", t.ID, "src", t.Src, "dst", t.Dst, "state", t.State, "sent", p.Sent, "err", err)
	}()
}

// waitTransfer is transfer once the copy has ended, wait (at most
// app.MaxTransferWait, whoever asks) has passed or ctx is done.
func (d *Daemon) waitTransfer(ctx context.Context, id string, wait time.Duration) (app.Transfer, bool) {
	wait = min(wait, app.MaxTransferWait)
	d.xfers.mu.Lock()
	ended := d.xfers.ended[id]
	d.xfers.mu.Unlock()
	if ended != nil && wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-ended:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	return d.transfer(id)
}

func (d *Daemon) transfer(id string) (app.Transfer, bool) {
	d.xfers.mu.Lock()
	defer d.xfers.mu.Unlock()
	t, ok := d.xfers.list[id]
	if !ok {
		return app.Transfer{}, false
	}
	return *t, true
}

// transferHandler lets members start copies into this machine's folders.
func (d *Daemon) transferHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/transfers", func(w http.ResponseWriter, r *http.Request) {
		var req transferRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
			http.Error(w, `{"code":"invalid","message":"decode the copy request"}`, http.StatusBadRequest)
			return
		}
		who, _ := transport.PeerID(r)
		member := who.String()
		if who == d.id.ID {
			member = ""
		}
		t, err := d.receive(req, member)
		writeJSON(w, t, err)
	})
	mux.HandleFunc("GET /v1/transfers/{id}", func(w http.ResponseWriter, r *http.Request) {
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait")) // none, if not a duration
		t, ok := d.waitTransfer(r.Context(), r.PathValue("id"), wait)
		if !ok {
			writeJSON(w, nil, fmt.Errorf("%w: no transfer %s", app.ErrNotFound, r.PathValue("id")))
			return
		}
		writeJSON(w, t, nil)
	})
	return mux
}

// receive starts pulling req into one of this machine's folders, on behalf
// of member ("" for this machine itself).
func (d *Daemon) receive(req transferRequest, member string) (app.Transfer, error) {
	root, _, err := d.folders.OpenRoot(req.DstFolder, member, true)
	if err != nil {
		return app.Transfer{}, err
	}
	hc, err := d.NodeDataClient(req.SrcNode)
	if err != nil {
		root.Close()
		return app.Transfer{}, err
	}
	t := &app.Transfer{ID: newTransferID(), Node: d.id.ID.String(), Src: req.Label[0], Dst: req.Label[1], State: "running", Started: time.Now().UTC()}
	pull := &folders.Pull{Src: httpSource{hc, req.SrcFolder}, SrcPath: req.SrcPath, SrcName: req.SrcName, Dst: root, DstPath: req.DstPath}
	d.startTransfer(d.runCtx, t, pull, func() {
		root.Close()
		if pull.Changed() {
			d.republish(req.DstFolder) // its size and file count changed
		}
	})
	return *t, nil
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusUnprocessableEntity
		switch {
		case strings.Contains(err.Error(), "not shared with you"), strings.Contains(err.Error(), "no such shared folder"):
			status = http.StatusNotFound
		case strings.Contains(err.Error(), "read-only"):
			status = http.StatusForbidden
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(app.Error{Code: "copy", Message: err.Error()})
		return
	}
	json.NewEncoder(w).Encode(v)
}

// copier implements app.Copier on the daemon.
type copier Daemon

// Copy implements app.Copier: the receiving machine pulls from the sender,
// so machine-to-machine bytes never pass through this one.
func (c *copier) Copy(ctx context.Context, req app.CopyRequest) (app.Transfer, error) {
	d := (*Daemon)(c)
	sNode, sFolder, sPath, sRemote := app.ParseRemote(req.Src)
	dNode, dFolder, dPath, dRemote := app.ParseRemote(req.Dst)
	if strings.HasSuffix(req.Dst, "/") && dRemote && dPath != "" && !strings.HasSuffix(dPath, "/") {
		dPath += "/"
	}
	label := [2]string{req.Src, req.Dst}
	switch {
	case !sRemote && !dRemote:
		return app.Transfer{}, fmt.Errorf("%w: both sides are local: use cp", app.ErrInvalid)
	case sRemote && !dRemote:
		return d.pullHere(ctx, sNode, sFolder, sPath, req.Dst, label)
	}
	dst, err := d.svc.NodeByRef(ctx, dNode)
	if err != nil {
		return app.Transfer{}, err
	}
	tr := transferRequest{DstFolder: dFolder, DstPath: dPath, Label: label}
	if sRemote {
		src, err := d.svc.NodeByRef(ctx, sNode)
		if err != nil {
			return app.Transfer{}, err
		}
		tr.SrcNode, tr.SrcFolder, tr.SrcPath = src.ID, sFolder, sPath
		tr.SrcName = path.Base(sPath)
		if sPath == "" || sPath == "." {
			tr.SrcName = sFolder
		}
	} else {
		if tr, err = d.offerLocal(req.Src, dst.ID, tr); err != nil {
			return app.Transfer{}, err
		}
	}
	var t app.Transfer
	if err := d.svc.NodeCall(ctx, dst.ID, http.MethodPost, "/v1/transfers", tr, &t); err != nil {
		if !sRemote {
			d.folders.Remove(tr.SrcFolder)
		}
		return app.Transfer{}, err
	}
	d.remember(t)
	if !sRemote {
		go d.withdrawOffer(tr.SrcFolder, t)
	}
	return t, nil
}

// withdrawOffer removes the transient share of a local source once its
// copy has ended (a later copy offers it again), or once the receiver has
// not answered for offerLinger.
func (d *Daemon) withdrawOffer(share string, t app.Transfer) {
	defer func() {
		d.folders.Remove(share)
		d.log.Info("a local path is no longer offered", "share", share, "copy", t.ID)
	}()
	silent := time.Now()
	for d.runCtx.Err() == nil {
		cur, err := (*copier)(d).Transfer(d.runCtx, t.Node, t.ID, app.MaxTransferWait)
		switch {
		case err == nil && cur.State != "running":
			return
		case err == nil:
			silent = time.Now()
		case time.Since(silent) > offerLinger:
			d.log.Info("the receiver of a copy stopped answering: its source is no longer offered", "id", t.ID, "share", share)
			return
		default:
			select { // unreachable for now: try again shortly
			case <-d.runCtx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// offerLinger is how long a local source stays offered to a receiver that
// does not answer (a receiver restarted mid-copy forgets the copy).
const offerLinger = 2 * time.Minute

// remember records a copy started through this daemon (the last 100).
func (d *Daemon) remember(t app.Transfer) {
	d.xfers.mu.Lock()
	d.xfers.started = append(d.xfers.started, startedTransfer{t.Node, t.ID, t})
	if n := len(d.xfers.started); n > 100 {
		d.xfers.started = d.xfers.started[n-100:]
	}
	d.xfers.mu.Unlock()
	d.saveTransfers(d.runCtx)
}

// Transfers implements app.Copier: each copy as its receiver reports it
// while it runs, as it ended, or as last known when the receiver cannot be
// reached (it may have restarted: copying again resumes).
func (c *copier) Transfers(ctx context.Context) ([]app.Transfer, error) {
	d := (*Daemon)(c)
	d.xfers.mu.Lock()
	started := slices.Clone(d.xfers.started)
	d.xfers.mu.Unlock()
	out := []app.Transfer{}
	changed := map[string]app.Transfer{}
	for i := len(started) - 1; i >= 0; i-- {
		s := started[i]
		if ended(s.Last) {
			out = append(out, s.Last) // final: no need to ask
			continue
		}
		t, err := c.Transfer(ctx, s.Node, s.ID, 0)
		switch {
		case err == nil:
			if t.State != s.Last.State {
				changed[s.ID] = t
			}
		case s.Last.ID != "":
			t = s.Last
			t.State, t.Error = "unknown", "the receiving machine does not answer about this copy: "+err.Error()
		default:
			t = app.Transfer{ID: s.ID, Node: s.Node, State: "unknown", Error: err.Error()}
		}
		out = append(out, t)
	}
	if len(changed) > 0 {
		d.xfers.mu.Lock()
		for i := range d.xfers.started {
			if t, ok := changed[d.xfers.started[i].ID]; ok {
				d.xfers.started[i].Last = t
			}
		}
		d.xfers.mu.Unlock()
		d.saveTransfers(ctx)
	}
	return out, nil
}

// offerLocal shares a local source for the receiving machine only, until
// the daemon stops (the share is named after the transfer).
func (d *Daemon) offerLocal(src, receiver string, tr transferRequest) (transferRequest, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return tr, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return tr, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	dir, name := abs, ""
	if !fi.IsDir() {
		dir, name = filepath.Dir(abs), filepath.Base(abs)
	}
	share := "xfer-" + newTransferID()
	if _, err := d.folders.Add(folders.Share{Name: share, Path: dir, Members: []string{receiver}, Transient: true}); err != nil {
		return tr, err
	}
	tr.SrcNode, tr.SrcFolder, tr.SrcPath, tr.SrcName = d.id.ID.String(), share, name, filepath.Base(abs)
	d.log.Info("offering a local path for one copy", "share", share, "to", receiver)
	return tr, nil
}

// pullHere copies a member's folder into a local path of this machine.
func (d *Daemon) pullHere(ctx context.Context, node, folder, p, dst string, label [2]string) (app.Transfer, error) {
	src, err := d.svc.NodeByRef(ctx, node)
	if err != nil {
		return app.Transfer{}, err
	}
	hc, err := d.NodeDataClient(src.ID)
	if err != nil {
		return app.Transfer{}, err
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return app.Transfer{}, err
	}
	rootDir, rel := abs, "."
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		rootDir, rel = filepath.Dir(abs), filepath.Base(abs)
	}
	if strings.HasSuffix(dst, "/") {
		rel += "/"
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return app.Transfer{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	name := path.Base(p)
	if p == "" || p == "." {
		name = folder
	}
	t := &app.Transfer{ID: newTransferID(), Node: d.id.ID.String(), Src: label[0], Dst: label[1], State: "running", Started: time.Now().UTC()}
	pull := &folders.Pull{Src: httpSource{hc, folder}, SrcPath: p, SrcName: name, Dst: root, DstPath: rel}
	d.startTransfer(d.runCtx, t, pull, func() { root.Close() })
	d.remember(*t)
	return *t, nil
}

// Transfer implements app.Copier.
func (c *copier) Transfer(ctx context.Context, node, id string, wait time.Duration) (app.Transfer, error) {
	d := (*Daemon)(c)
	if node == "" || node == d.id.ID.String() {
		t, ok := d.waitTransfer(ctx, id, wait)
		if !ok {
			return app.Transfer{}, fmt.Errorf("%w: no transfer %s", app.ErrNotFound, id)
		}
		return t, nil
	}
	var t app.Transfer
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return t, d.svc.NodeCall(ctx, node, http.MethodGet, "/v1/transfers/"+url.PathEscape(id)+"?"+q.Encode(), nil, &t)
}
