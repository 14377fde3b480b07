package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
)

// SystemSocket is where a machine's system agent (the labpool package's
// service, `labpool agent --system`) serves the local API to the people
// who administer that machine: mode 0660, group AdminGroup.
const SystemSocket = "/run/labpool/labpool.sock"

// AdminGroup is the Unix group whose members administer a machine through
// its system agent (policy, gpu clear, every other verb): the package makes
// it, an admin adds people to it.
const AdminGroup = "labpool"

// Peer is who opened a unix socket connection, as the kernel recorded it
// when they connected (SO_PEERCRED, SO_PEERGROUPS): not what they claim.
type Peer struct {
	UID, GID uint32
	PID      int32
	Groups   []uint32 // supplementary groups
}

// Admins says who administers a machine through the system socket: root,
// the agent's own user, and the members of one group.
type Admins struct {
	UID       uint32 // the agent's own user
	GID       uint32 // the group's id
	GroupName string // the group's name, for the refusal
}

// LookupAdmins looks group ("": AdminGroup) up, with this process's user:
// the system agent does not start without it, for a socket no one but root
// could use would hide the mistake.
func LookupAdmins(group string) (Admins, error) {
	if group == "" {
		group = AdminGroup
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return Admins{}, fmt.Errorf("look up the admin group %q (the labpool package makes it; or groupadd --system %s): %w", group, group, err)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return Admins{}, fmt.Errorf("look up the admin group %q: gid %q: %w", group, g.Gid, err)
	}
	return Admins{UID: uint32(os.Geteuid()), GID: uint32(gid), GroupName: group}, nil
}

// Admits reports whether p administers the machine.
func (a Admins) Admits(p Peer) bool {
	return p.UID == 0 || p.UID == a.UID || p.GID == a.GID || slices.Contains(p.Groups, a.GID)
}

// Refusal is the sentence a peer who is not an admin reads: the group to
// join, and how.
func (a Admins) Refusal() string {
	return fmt.Sprintf("this machine's labpool system agent admits root and the members of group %q; "+
		"ask an admin to run `sudo adduser YOUR_USER %s`, then log in again", a.GroupName, a.GroupName)
}

type peerKey struct{}

// PeerContext is an http.Server's ConnContext for a unix socket: it reads
// the peer's credentials once per connection into the context, where
// RequireAdmin finds them. A connection whose credentials cannot be read
// carries none, and is refused.
func PeerContext(ctx context.Context, c net.Conn) context.Context {
	p, err := peerOf(c)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom returns the peer PeerContext recorded, if any.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// RequireAdmin serves h to the peers a admits and refuses every other with
// 403 "not_admin", naming the group to join. It needs the server's
// ConnContext to be PeerContext: without credentials, nobody is admitted.
func RequireAdmin(h http.Handler, a Admins) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PeerFrom(r.Context())
		if !ok {
			writeError(w, http.StatusForbidden, "not_admin", "the peer's credentials could not be read: "+a.Refusal())
			return
		}
		if !a.Admits(p) {
			writeError(w, http.StatusForbidden, "not_admin", a.Refusal())
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListenSystem listens on path for the system agent: the socket is made
// mode 0660 and given group gid, so that only root, the agent's user and
// the group's members can connect at all (RequireAdmin checks each
// connection again, by its credentials). A stale socket left by an agent
// that is gone is replaced; one that answers is another agent's, and an
// error.
func ListenSystem(path string, gid int) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create the system socket's directory: %w", err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("listen on %s: another labpool agent serves it", path)
	}
	os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Under the unit (Group=labpool) the socket is the group's already, and
	// its system call filter refuses chown: only a root agent gives it.
	if st, err := os.Stat(path); err != nil || statGID(st) != gid {
		if err := os.Chown(path, -1, gid); err != nil {
			l.Close()
			return nil, fmt.Errorf("give %s to group %d: %w", path, gid, err)
		}
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		return nil, fmt.Errorf("make %s mode 0660: %w", path, err)
	}
	return l, nil
}
