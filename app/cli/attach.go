package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"syscall"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// ErrNotAdmin means a system agent serves this machine and does not admit
// this user: they are not in its group.
var ErrNotAdmin = errors.New("not an admin of this machine's labpool system agent")

// SystemSocket is the system agent's socket: web.SystemSocket, or
// LABPOOL_SYSTEM_SOCKET (for tests, and machines that move /run).
func SystemSocket() string {
	if s := os.Getenv("LABPOOL_SYSTEM_SOCKET"); s != "" {
		return s
	}
	return web.SystemSocket
}

// Attach returns the socket a user's CLI and window talk to: the system
// agent's (the labpool package's service) when one answers there, else
// dataDir's own, where the user's agent runs or is started. A system agent
// that refuses this user (its socket's mode, or its credential check)
// is an ErrNotAdmin that names the group to join: the user's own agent
// would stand for the same machine a second time.
func Attach(ctx context.Context, systemSocket, dataDir string) (socket string, system bool, err error) {
	own := SocketPath(dataDir)
	if systemSocket == "" {
		return own, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", systemSocket)
	switch {
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		return "", true, notAdmin(systemSocket)
	case err != nil: // none there (ENOENT), or gone (ECONNREFUSED)
		return own, false, nil
	}
	c.Close()
	err = web.NewClient(systemSocket).Ping(ctx)
	var api *app.APIError
	switch {
	case err == nil:
		return systemSocket, true, nil
	case errors.As(err, &api) && api.Code == "not_admin":
		return "", true, fmt.Errorf("%w: %w", ErrNotAdmin, err)
	case errors.Is(err, web.ErrNoDaemon):
		return own, false, nil
	default:
		return "", true, fmt.Errorf("reach this machine's labpool system agent at %s: %w", systemSocket, err)
	}
}

func notAdmin(socket string) error {
	name := "YOUR_USER"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return fmt.Errorf("%w: a labpool system agent serves this machine (%s) and admits root and the members of group %q: "+
		"ask an admin to run `sudo adduser %s %s`, then log in again", ErrNotAdmin, socket, web.AdminGroup, name, web.AdminGroup)
}
