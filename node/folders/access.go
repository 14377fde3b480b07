package folders

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Roles in the pool, as the daemon names them.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Refusals by role.
var (
	ErrViewer = errors.New("refused: viewers browse folders but copy nothing")
	ErrNoRole = errors.New("refused: only members of the pool use its folders")
)

// Caller is who asks: the device proven by TLS (this machine's own ID for
// its own calls) and its role in the pool ("" = not a member).
type Caller struct {
	ID   string
	Role string
}

// Use is what a caller does with a share.
type Use int

// Uses of a share.
const (
	Browse Use = iota // list directories (viewers too)
	Read              // read files, as a copy's source
	Write             // write files, as a copy's receiver
)

// allow checks who may use s so: this machine may do anything the share
// allows; others need their device on the share's member list (if it has
// one) and, to read or write, a role of member or above.
func (r *Registry) allow(s Share, who Caller, use Use) error {
	if r.cfg.Self == "" || who.ID != r.cfg.Self {
		if err := r.listed(s, who.ID); err != nil {
			return err
		}
		switch who.Role {
		case RoleOwner, RoleAdmin, RoleMember:
		case RoleViewer:
			if use != Browse {
				return fmt.Errorf("%w (%s)", ErrViewer, s.Name)
			}
		default:
			return fmt.Errorf("%w (%s)", ErrNoRole, s.Name)
		}
	}
	if use == Write && !s.ReadWrite {
		return fmt.Errorf("%w: %s", ErrReadOnly, s.Name)
	}
	return nil
}

// Opened is a share opened for one request. Paths a member sends go
// through Path.
type Opened struct {
	Root  *os.Root
	Share Share
	file  string // a one-file share: the file's name in Root, its only item
	grant *Grant // the grant the request came with, if any
	// Owner is the folder user what a copy writes into it is given to
	// (FolderUser); set when it is opened to receive a copy.
	Owner *Owner
}

// Close closes the root.
func (o *Opened) Close() error { return o.Root.Close() }

// Path maps p, a path in the share sent by a member, to its name in Root:
// a one-file share holds its top alone, and a granted request stays under
// the granted path.
func (o *Opened) Path(p string) (string, error) {
	clean, err := CleanPath(p)
	if err != nil {
		return "", err
	}
	if o.grant != nil && !o.grant.within(clean) {
		return "", fmt.Errorf("%w: %q is outside the granted path %q", ErrGrant, p, o.grant.Path)
	}
	if o.file == "" {
		return clean, nil
	}
	if clean != "." {
		return "", fmt.Errorf("%w: %q: this share offers one file, its top", ErrBadPath, p)
	}
	return o.file, nil
}

// OpenFor opens a share for a caller's use (browsing, or a copy into it),
// checking the caller's role, the share's member list and its mode.
func (r *Registry) OpenFor(name string, who Caller, use Use) (*Opened, error) {
	s, err := r.Get(name)
	if err != nil {
		return nil, err
	}
	if err := r.allow(s, who, use); err != nil {
		return nil, err
	}
	return r.openShare(s)
}

// OpenGranted opens a share for reading by peer, the receiver of a copy,
// on the authority of g: the member who signed g must be allowed to read
// the share (roleOf gives a device's role), g must name this machine, the
// share and peer, and be unexpired or in use by a running copy. A
// transient share is read by the device it was offered to only.
func (r *Registry) OpenGranted(name string, peer Caller, g Grant, roleOf func(id string) string) (*Opened, error) {
	s, err := r.Get(name)
	if err != nil {
		return nil, err
	}
	m := g.Member()
	switch {
	case g.Folder != name:
		return nil, fmt.Errorf("%w: it names the folder %q, not %q", ErrGrant, g.Folder, name)
	case r.cfg.Self != "" && g.Src != r.cfg.Self:
		return nil, fmt.Errorf("%w: it names another source machine", ErrGrant)
	case g.Receiver != peer.ID:
		return nil, fmt.Errorf("%w: it names another receiver", ErrGrant)
	case s.Transient && !slices.Contains(s.Members, peer.ID):
		return nil, fmt.Errorf("%w: %s is offered to one device", ErrNotMember, name)
	}
	if err := r.allow(s, Caller{ID: m, Role: roleOf(m)}, Read); err != nil {
		return nil, err
	}
	if err := r.useGrant(g, m); err != nil {
		return nil, err
	}
	o, err := r.openShare(s)
	if err != nil {
		return nil, err
	}
	o.grant = &g
	return o, nil
}

// grantUse is a grant a copy is using.
type grantUse struct {
	member, receiver string
	last             time.Time
}

// useGrant accepts g before its expiry, and afterwards while its copy
// keeps using it at least every GrantIdle.
func (r *Registry) useGrant(g Grant, member string) error {
	now := r.cfg.Now()
	if g.Expires.Sub(now) > GrantTTL+time.Minute {
		return fmt.Errorf("%w: it lasts longer than %v", ErrGrant, GrantTTL)
	}
	key := member + "/" + string(g.Nonce[:])
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.grants[key]
	switch {
	case ok && now.Sub(u.last) <= r.cfg.GrantIdle:
	case ok || now.After(g.Expires):
		delete(r.grants, key)
		return fmt.Errorf("%w: it expired", ErrGrant)
	case len(r.grants) >= r.cfg.MaxGrants:
		r.pruneGrantsLocked(now)
		if len(r.grants) >= r.cfg.MaxGrants {
			return fmt.Errorf("%w: this machine serves %d copies already", ErrGrant, r.cfg.MaxGrants)
		}
	}
	r.grants[key] = grantUse{member: member, receiver: g.Receiver, last: now}
	return nil
}

func (r *Registry) pruneGrantsLocked(now time.Time) {
	for k, u := range r.grants {
		if now.Sub(u.last) > r.cfg.GrantIdle {
			delete(r.grants, k)
		}
	}
}

// openShare opens s's directory (a one-file share's, the directory
// holding it) after checking again that it may be shared (it may have
// become a link to a system directory) and records the use.
func (r *Registry) openShare(s Share) (*Opened, error) {
	real, err := r.refused.check(s.Path)
	if err != nil {
		return nil, fmt.Errorf("open share %s: %w", s.Name, err)
	}
	o := &Opened{Share: s}
	dir := real
	if s.Transient {
		if fi, err := os.Stat(real); err == nil && !fi.IsDir() {
			dir, o.file = filepath.Dir(real), filepath.Base(real)
		}
	}
	if o.Root, err = os.OpenRoot(dir); err != nil {
		return nil, fmt.Errorf("open share %s: %w", s.Name, err)
	}
	r.touch(s)
	return o, nil
}

// OpenReceiving opens the destination of a copy this machine receives
// for the member who asks (who, proven by TLS), on the authority of the
// grant it will forward to the source: who must have signed it for this
// machine, and may write dst here.
func (r *Registry) OpenReceiving(dst string, who Caller, g Grant) (*Opened, error) {
	switch {
	case g.Member() != who.ID:
		return nil, fmt.Errorf("%w: it was signed by another device than the one asking", ErrGrant)
	case r.cfg.Self != "" && g.Receiver != r.cfg.Self:
		return nil, fmt.Errorf("%w: it names another receiver", ErrGrant)
	}
	o, err := r.OpenFor(dst, who, Write)
	if err != nil {
		return nil, err
	}
	own, err := FolderUser(o.Root.Name(), r.jobUser())
	if err != nil {
		o.Close()
		return nil, fmt.Errorf("receive into %s: %w", dst, err)
	}
	o.Owner = &own
	return o, nil
}
