package app

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"
	"github.com/labpool/labpool/node/folders/copies"
	"sort"
	"strings"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// KindFolder is the replica record of one shared folder, written by the
// node that shares it (key: the folder's name; data: folders.Info).
const KindFolder = schema.KindFolder

// Folder is a shared folder of the pool, as listed.
type Folder struct {
	Node      string   `json:"node"`
	NodeName  string   `json:"node_name"`
	Name      string   `json:"name"`
	Mode      string   `json:"mode"` // ro or rw
	SizeBytes int64    `json:"size_bytes"`
	Files     int      `json:"files"`
	AtLeast   bool     `json:"size_at_least,omitempty"` // the share was too large to measure whole: at least this much
	Members   []string `json:"members,omitempty"`       // device IDs of who may use it; none: every member
	// MemberNames are Members' names, in the same order (a short ID for a
	// device the pool no longer lists).
	MemberNames []string `json:"member_names,omitempty"`
	Stale       bool     `json:"stale"`
}

// ShareRequest shares a directory of this machine.
type ShareRequest struct {
	Name      string   `json:"name"`
	Path      string   `json:"path"`
	ReadWrite bool     `json:"rw"`
	Members   []string `json:"members,omitempty"`
}

// FolderMembersRequest changes who may use a folder: Members replaces
// the list, Add and Remove edit it, and none of them means every member
// (member names, short IDs or device IDs). Node names the machine that
// holds it ("" or this machine's: here); its holder checks that this
// device may (an owner, an admin or the folder's sharer).
type FolderMembersRequest struct {
	Node    string   `json:"node,omitempty"`
	Name    string   `json:"name"`
	Members []string `json:"members"`
	Add     []string `json:"add,omitempty"`
	Remove  []string `json:"remove,omitempty"`
}

// FolderManager shares this machine's folders (implemented by the daemon).
type FolderManager interface {
	Share(ctx context.Context, req ShareRequest) (Folder, error)
	// SetMembers changes who may use a share of this machine (device
	// IDs), keeping its path and mode.
	SetMembers(ctx context.Context, name string, ch folders.MembersChange) (Folder, error)
	Unshare(ctx context.Context, name string) error
}

// Folders lists every shared folder of the pool from the replica.
func (r *Reader) Folders(ctx context.Context) ([]Folder, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	members, err := r.db.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	out := []Folder{}
	for _, n := range nodes {
		recs, err := r.db.Range(ctx, n.ID, KindFolder, time.Time{}, time.Now().Add(24*time.Hour))
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			var fi folders.Info
			if json.Unmarshal(rec.Data, &fi) != nil || fi.Name == "" || fi.Removed {
				continue
			}
			out = append(out, Folder{Node: n.ID, NodeName: n.Name, Name: fi.Name, Mode: fi.Mode,
				SizeBytes: fi.SizeBytes, Files: fi.Files, AtLeast: fi.AtLeast, Members: fi.Members,
				MemberNames: MemberNames(members, fi.Members), Stale: !n.Online})
		}
	}
	sort.Slice(out, func(i, k int) bool {
		if out[i].NodeName != out[k].NodeName {
			return out[i].NodeName < out[k].NodeName
		}
		return out[i].Name < out[k].Name
	})
	return out, nil
}

// Share shares a directory of this machine with the pool.
func (s *Service) Share(ctx context.Context, req ShareRequest) (Folder, error) {
	if !folders.ValidName(req.Name) {
		return Folder{}, fmt.Errorf("%w: share name %q: use 1 to 64 letters, digits, '.', '_' or '-'", ErrInvalid, req.Name)
	}
	members, err := s.db.Members(ctx)
	if err != nil {
		return Folder{}, fmt.Errorf("read the pool's members: %w", err)
	}
	if len(req.Members) > 0 {
		if req.Members, err = ResolveMembers(members, req.Members); err != nil {
			return Folder{}, fmt.Errorf("share %s: %w", req.Name, err)
		}
	}
	f, err := s.folders.Share(ctx, req)
	f.MemberNames = MemberNames(members, f.Members)
	return f, err
}

// SetFolderMembers changes who may use a folder, on the machine that
// holds it: the names and short IDs are resolved to device IDs first (see
// ResolveMembers). A folder named on a machine that does not hold it is
// refused naming where it is.
func (s *Service) SetFolderMembers(ctx context.Context, req FolderMembersRequest) (Folder, error) {
	members, err := s.db.Members(ctx)
	if err != nil {
		return Folder{}, fmt.Errorf("read the pool's members: %w", err)
	}
	var ch folders.MembersChange
	for _, l := range []struct {
		in  []string
		out *[]string
	}{{req.Members, &ch.Set}, {req.Add, &ch.Add}, {req.Remove, &ch.Remove}} {
		if len(l.in) == 0 {
			continue
		}
		if *l.out, err = ResolveMembers(members, l.in); err != nil {
			return Folder{}, fmt.Errorf("members of %s: %w", req.Name, err)
		}
	}
	ch.Every = len(ch.Set) == 0 && len(ch.Add) == 0 && len(ch.Remove) == 0
	node := s.self.ID
	if req.Node != "" {
		n, err := s.NodeByRef(ctx, req.Node)
		if err != nil {
			return Folder{}, err
		}
		node = n.ID
	}
	if err := s.folderIsOn(ctx, node, req.Name); err != nil {
		return Folder{}, err
	}
	var f Folder
	if node == s.self.ID {
		f, err = s.folders.SetMembers(ctx, req.Name, ch)
	} else {
		var info folders.Info
		info, err = folders.Client{Conn: s.Peer(node)}.ChangeMembers(ctx, req.Name, ch)
		f = Folder{Node: node, Name: info.Name, Mode: info.Mode, SizeBytes: info.SizeBytes, Files: info.Files,
			AtLeast: info.AtLeast, Members: info.Members}
		if n, nerr := s.NodeByRef(ctx, node); nerr == nil {
			f.NodeName = n.Name
		}
	}
	if err != nil {
		return Folder{}, err
	}
	f.MemberNames = MemberNames(members, f.Members)
	return f, nil
}

// folderIsOn refuses a folder that the replica lists on other machines
// than node and not on node, naming where it is; a folder the replica
// lists nowhere is left to node to answer for.
func (s *Service) folderIsOn(ctx context.Context, node, name string) error {
	all, err := s.Folders(ctx)
	if err != nil {
		return err
	}
	var at []string
	for _, f := range all {
		if f.Name != name {
			continue
		}
		if f.Node == node {
			return nil
		}
		at = append(at, f.NodeName)
	}
	switch {
	case len(at) == 1:
		return fmt.Errorf("%w: %s is on %s: labpool share %s:%s …", ErrNotFound, name, at[0], at[0], name)
	case len(at) > 1:
		return fmt.Errorf("%w: %s is on %s: name one, as in labpool share %s:%s …", ErrNotFound, name, strings.Join(at, ", "), at[0], name)
	}
	return nil
}

// Unshare stops sharing a folder of this machine.
func (s *Service) Unshare(ctx context.Context, name string) error {
	return s.folders.Unshare(ctx, name)
}

// ParseRemote splits "NODE:FOLDER[/PATH]"; ok is false for a local path.
func ParseRemote(s string) (node, folder, path string, ok bool) { return copies.ParseRemote(s) }

// Ls lists a directory of a shared folder on its node.
func (s *Service) Ls(ctx context.Context, node, folder, path string) ([]folders.Entry, error) {
	n, err := s.NodeByRef(ctx, node)
	if err != nil {
		return nil, err
	}
	return folders.Client{Conn: s.Peer(n.ID)}.Ls(ctx, folder, path)
}

// CopyRequest copies SRC to DST; each is a local path or NODE:FOLDER[/PATH].
type CopyRequest struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

// Transfer is a copy under way or ended, on the machine that receives it
// (the copy engine's own record).
type Transfer = copies.Transfer

// Copier runs copies (implemented by the daemon).
type Copier interface {
	Copy(ctx context.Context, req CopyRequest) (Transfer, error)
	// Transfer returns a copy's state; with wait > 0 it first waits until
	// the copy ends or wait passes, so that a watcher learns of the end at
	// once without polling fast.
	Transfer(ctx context.Context, node, id string, wait time.Duration) (Transfer, error)
	// Transfers lists the copies started through this daemon, newest first.
	Transfers(ctx context.Context) ([]Transfer, error)
}

// Copy starts a copy and returns its transfer.
func (s *Service) Copy(ctx context.Context, req CopyRequest) (Transfer, error) {
	if req.Src == "" || req.Dst == "" {
		return Transfer{}, fmt.Errorf("%w: a source and a destination are required", ErrInvalid)
	}
	return s.copier.Copy(ctx, req)
}

// MaxTransferWait bounds how long one Transfer call waits for a copy's end.
const MaxTransferWait = 10 * time.Second

// Transfer returns the state of a copy on the machine that runs it, after
// waiting up to wait (at most MaxTransferWait) for it to end.
func (s *Service) Transfer(ctx context.Context, node, id string, wait time.Duration) (Transfer, error) {
	return s.copier.Transfer(ctx, node, id, wait) // the machine running it bounds the wait
}

// Transfers lists the copies started through this machine, newest first,
// with their state on the machines that run them.
func (s *Service) Transfers(ctx context.Context) ([]Transfer, error) {
	return s.copier.Transfers(ctx)
}
