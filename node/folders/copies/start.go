package copies

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/peerapi"
)

// Copy starts a copy: the receiving machine pulls from the sender, so
// machine-to-machine bytes never pass through this one.
func (r *Receiver) Copy(ctx context.Context, req Request) (Transfer, error) {
	sNode, sFolder, sPath, sRemote := ParseRemote(req.Src)
	dNode, dFolder, dPath, dRemote := ParseRemote(req.Dst)
	if strings.HasSuffix(req.Dst, "/") && dRemote && dPath != "" && !strings.HasSuffix(dPath, "/") {
		dPath += "/"
	}
	label := [2]string{req.Src, req.Dst}
	switch {
	case !sRemote && !dRemote:
		return Transfer{}, fmt.Errorf("%w: both sides are local: use cp", ErrInvalid)
	case sRemote && !dRemote:
		return r.pullHere(ctx, sNode, sFolder, sPath, req.Dst, label)
	}
	dst, err := r.deps.Members.Resolve(ctx, dNode)
	if err != nil {
		return Transfer{}, err
	}
	tr := request{DstFolder: dFolder, DstPath: dPath, Label: label}
	if sRemote {
		if tr.SrcNode, err = r.deps.Members.Resolve(ctx, sNode); err != nil {
			return Transfer{}, err
		}
		tr.SrcFolder, tr.SrcPath, tr.SrcName = sFolder, sPath, topName(sFolder, sPath)
	} else if tr, err = r.offerLocal(req.Src, dst, tr); err != nil {
		return Transfer{}, err
	}
	t, err := r.ask(ctx, dst, tr)
	if err != nil {
		if !sRemote {
			r.deps.Folders.Remove(tr.SrcFolder)
		}
		return Transfer{}, err
	}
	r.remember(ctx, t)
	if !sRemote {
		r.withdrawLater(ctx, tr.SrcFolder, t)
	}
	return t, nil
}

// ask signs the grant of tr and asks the member dst to receive it.
func (r *Receiver) ask(ctx context.Context, dst string, tr request) (Transfer, error) {
	var err error
	if tr.Grant, err = r.deps.Signer.Grant(tr.SrcNode, tr.SrcFolder, tr.SrcPath, dst, time.Now()); err != nil {
		return Transfer{}, err
	}
	return startOn(ctx, peerapi.Conn{Doer: r.deps.Members, Node: dst}, tr)
}

// topName is the name the copied top takes: the folder's for its top.
func topName(folder, p string) string {
	if p == "" || p == "." {
		return folder
	}
	return path.Base(p)
}

// withdrawLater removes, under Run, the transient share of a local source
// once its copy t has ended; at once if Run has stopped.
func (r *Receiver) withdrawLater(ctx context.Context, share string, t Transfer) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	err := r.spawn(ctx, wctx, cancel, func(_, ctx context.Context) { r.withdrawOffer(ctx, share, t) })
	if err != nil {
		r.deps.Folders.Remove(share)
	}
}

// withdrawOffer removes the transient share of a local source once its
// copy has ended (a later copy offers it again), or once the receiver has
// not answered for Config.OfferLinger, or ctx is done.
func (r *Receiver) withdrawOffer(ctx context.Context, share string, t Transfer) {
	defer func() {
		r.deps.Folders.Remove(share)
		r.deps.Log.Info("a local path is no longer offered", "share", share, "copy", t.ID)
	}()
	silent := time.Now()
	for ctx.Err() == nil {
		cur, err := r.Transfer(ctx, t.Node, t.ID, r.cfg.MaxWait)
		switch {
		case err == nil && cur.State != "running":
			return
		case err == nil:
			silent = time.Now()
		case time.Since(silent) > r.cfg.OfferLinger:
			r.deps.Log.Info("the receiver of a copy stopped answering: its source is no longer offered", "id", t.ID, "share", share)
			return
		default:
			select { // unreachable for now: try again shortly
			case <-ctx.Done():
			case <-time.After(r.cfg.Retry):
			}
		}
	}
}

// offerLocal shares a local source for the receiving machine only: the
// file or the tree itself, never what is beside it, until its copy ends or
// it goes unused for the registry's TransientIdle (the share is named
// after the transfer).
func (r *Receiver) offerLocal(src, receiver string, tr request) (request, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return tr, err
	}
	if _, err := os.Stat(abs); err != nil {
		return tr, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	share := "xfer-" + newTransferID()
	// This machine is listed beside the receiver, as the member whose grant
	// the receiver forwards (folders.Config.Self makes that implicit).
	members := []string{receiver, r.cfg.Self}
	if _, err := r.deps.Folders.Add(folders.Share{Name: share, Path: abs, Members: members, Transient: true}); err != nil {
		return tr, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	tr.SrcNode, tr.SrcFolder, tr.SrcPath, tr.SrcName = r.cfg.Self, share, "", filepath.Base(abs)
	r.deps.Log.Info("offering a local path for one copy", "share", share, "to", receiver)
	return tr, nil
}

// pullHere copies a member's folder into a local path of this machine.
func (r *Receiver) pullHere(ctx context.Context, node, folder, p, dst string, label [2]string) (Transfer, error) {
	src, err := r.deps.Members.Resolve(ctx, node)
	if err != nil {
		return Transfer{}, err
	}
	hc, err := r.deps.Dialer.NodeDataClient(src)
	if err != nil {
		return Transfer{}, err
	}
	root, rel, err := openLocal(dst)
	if err != nil {
		return Transfer{}, err
	}
	grant, err := r.deps.Signer.Grant(src, folder, p, r.cfg.Self, time.Now())
	if err != nil {
		root.Close()
		return Transfer{}, err
	}
	t := r.newTransfer(label)
	pull := &Pull{Src: folders.HTTPSource{Client: hc, Folder: folder, Grant: grant}, SrcPath: p, SrcName: topName(folder, p), Dst: root, DstPath: rel}
	started, err := r.start(ctx, t, pull, r.cfg.Self, src, func(context.Context) { root.Close() })
	if err != nil {
		root.Close()
		return Transfer{}, err
	}
	r.remember(ctx, started)
	return started, nil
}

// openLocal opens where a copy to the local path dst writes: the directory
// dst, or the one holding it, and the target in it.
func openLocal(dst string) (*os.Root, string, error) {
	abs, err := filepath.Abs(dst)
	if err != nil {
		return nil, "", err
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
		return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return root, rel, nil
}

// newTransfer is a running copy received here, labelled as the user wrote
// its source and destination.
func (r *Receiver) newTransfer(label [2]string) *Transfer {
	return &Transfer{ID: newTransferID(), Node: r.cfg.Self, Src: label[0], Dst: label[1], State: "running", Started: time.Now().UTC()}
}

// Transfer returns the state of the copy id on the machine node that runs
// it ("" for this one), after waiting up to wait (at most Config.MaxWait
// there) for it to end.
func (r *Receiver) Transfer(ctx context.Context, node, id string, wait time.Duration) (Transfer, error) {
	if node == "" || node == r.cfg.Self {
		return r.wait(ctx, id, wait)
	}
	return transferOn(ctx, peerapi.Conn{Doer: r.deps.Members, Node: node}, id, wait)
}
