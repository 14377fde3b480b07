package daemon

import (
	"context"
	"crypto/ed25519"
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
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
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
	// Grant is the asking member's authority to read the source
	// (folders.Grant, encoded): the receiver forwards it to the source.
	Grant string `json:"grant"`
}

// transfers runs the copies this machine receives, and remembers the
// copies started through it.
type transfers struct {
	mu      sync.Mutex // guards list, ended, running, started
	list    map[string]*app.Transfer
	ended   map[string]chan struct{} // closed when the copy ends
	running map[string]runningCopy   // by transfer ID, until the copy ends
	started []startedTransfer        // newest last
}

// runningCopy is a copy this machine receives: who asked for it, where it
// reads, and how to end it.
type runningCopy struct {
	member, src string // device IDs
	cancel      context.CancelFunc
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

func newTransferID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// startTransfer runs pull in the background, recording its progress as
// t.ID, for member reading from the node src (cancelCopiesOf ends it).
func (d *Daemon) startTransfer(ctx context.Context, t *app.Transfer, pull *folders.Pull, member, src string, done func()) {
	ctx, cancel := context.WithCancel(ctx)
	d.xfers.mu.Lock()
	if d.xfers.running == nil {
		d.xfers.running = map[string]runningCopy{}
	}
	d.xfers.running[t.ID] = runningCopy{member: member, src: src, cancel: cancel}
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
		defer cancel()
		p, err := pull.Run(ctx)
		now := time.Now().UTC()
		d.xfers.mu.Lock()
		delete(d.xfers.running, t.ID)
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

// cancelCopiesOf ends at once the copies this machine receives that the
// device asked for or reads from, and what this machine offered it (for a
// device removed from the pool).
func (d *Daemon) cancelCopiesOf(device string) {
	d.folders.DropTransient(device)
	d.xfers.mu.Lock()
	defer d.xfers.mu.Unlock()
	for id, c := range d.xfers.running {
		if c.member == device || c.src == device {
			c.cancel()
			d.log.Info("ended a copy of a device removed from the pool", "id", id, "peer", device)
		}
	}
}

// grant signs this machine's authority for receiver to read p of folder on
// the node src, for one copy.
func (d *Daemon) grant(src, folder, p, receiver string) (string, error) {
	key, ok := d.id.Cert.PrivateKey.(ed25519.PrivateKey)
	if !ok {
		return "", errors.New("this machine's key is not an Ed25519 key")
	}
	s := folders.Signer{Key: key.Public().(ed25519.PublicKey), Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }}
	return s.Grant(src, folder, p, receiver, time.Now())
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
		t, err := d.receive(req, d.folderCaller(r))
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

// receive starts pulling req into one of this machine's folders for the
// member who asks, on that member's authority: the member must be allowed
// to write the destination here, and signed the grant this machine
// forwards to the source, which checks the member's right to read there.
func (d *Daemon) receive(req transferRequest, who folders.Caller) (app.Transfer, error) {
	g, err := folders.DecodeGrant(req.Grant)
	switch {
	case err != nil:
		return app.Transfer{}, err
	case g.Receiver != d.id.ID.String():
		return app.Transfer{}, fmt.Errorf("%w: it names another receiver", folders.ErrGrant)
	case g.Src != req.SrcNode || g.Folder != req.SrcFolder || g.Path != req.SrcPath:
		return app.Transfer{}, fmt.Errorf("%w: it names another source than the copy", folders.ErrGrant)
	}
	dst, err := d.folders.OpenReceiving(req.DstFolder, who, g)
	if err != nil {
		return app.Transfer{}, err
	}
	hc, err := d.NodeDataClient(req.SrcNode)
	if err != nil {
		dst.Close()
		return app.Transfer{}, err
	}
	t := &app.Transfer{ID: newTransferID(), Node: d.id.ID.String(), Src: req.Label[0], Dst: req.Label[1], State: "running", Started: time.Now().UTC()}
	src := folders.HTTPSource{Client: hc, Folder: req.SrcFolder, Grant: req.Grant}
	pull := &folders.Pull{Src: src, SrcPath: req.SrcPath, SrcName: req.SrcName, Dst: dst.Root, DstPath: req.DstPath}
	d.startTransfer(d.runCtx, t, pull, who.ID, req.SrcNode, func() {
		dst.Close()
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
		case strings.Contains(err.Error(), "read-only"), strings.HasPrefix(err.Error(), "refused"):
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
	if tr.Grant, err = d.grant(tr.SrcNode, tr.SrcFolder, tr.SrcPath, dst.ID); err != nil {
		if !sRemote {
			d.folders.Remove(tr.SrcFolder)
		}
		return app.Transfer{}, err
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

// offerLocal shares a local source for the receiving machine only: the
// file or the tree itself, never what is beside it, until its copy ends or
// it goes unused for the registry's TransientIdle (the share is named
// after the transfer).
func (d *Daemon) offerLocal(src, receiver string, tr transferRequest) (transferRequest, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return tr, err
	}
	if _, err := os.Stat(abs); err != nil {
		return tr, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	share := "xfer-" + newTransferID()
	// This machine is listed beside the receiver, as the member whose grant
	// the receiver forwards (folders.Config.Self makes that implicit).
	members := []string{receiver, d.id.ID.String()}
	if _, err := d.folders.Add(folders.Share{Name: share, Path: abs, Members: members, Transient: true}); err != nil {
		return tr, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	tr.SrcNode, tr.SrcFolder, tr.SrcPath, tr.SrcName = d.id.ID.String(), share, "", filepath.Base(abs)
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
	grant, err := d.grant(src.ID, folder, p, d.id.ID.String())
	if err != nil {
		root.Close()
		return app.Transfer{}, err
	}
	t := &app.Transfer{ID: newTransferID(), Node: d.id.ID.String(), Src: label[0], Dst: label[1], State: "running", Started: time.Now().UTC()}
	pull := &folders.Pull{Src: folders.HTTPSource{Client: hc, Folder: folder, Grant: grant}, SrcPath: p, SrcName: name, Dst: root, DstPath: rel}
	d.startTransfer(d.runCtx, t, pull, d.id.ID.String(), src.ID, func() { root.Close() })
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
