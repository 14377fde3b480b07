package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/labpool/labpool/app/web"
)

type systemListener struct {
	srv *http.Server
	l   net.Listener
}

// systemServer listens on the system socket for the machine's admins: the
// local API, each connection admitted by its peer's credentials.
func (d *Daemon) systemServer(ctx context.Context) (systemListener, error) {
	a, err := admins(d.cfg.AdminGroup)
	if err != nil {
		return systemListener{}, err
	}
	l, err := web.ListenSystem(d.cfg.SystemSocket, int(a.GID))
	if err != nil {
		return systemListener{}, err
	}
	srv := &http.Server{
		Handler:           web.RequireAdmin(web.Handler(d.svc, nil, d.log), a),
		ConnContext:       web.PeerContext,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	d.log.Info("serving the machine's admins", "socket", d.cfg.SystemSocket, "group", a.GroupName)
	return systemListener{srv: srv, l: l}, nil
}

// admins looks group up: the system agent does not start without it, for
// a socket no one but root could use would hide the mistake.
func admins(group string) (web.Admins, error) {
	if group == "" {
		group = web.AdminGroup
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return web.Admins{}, fmt.Errorf("look up the admin group %q (the labpool package makes it; or groupadd --system %s): %w", group, group, err)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return web.Admins{}, fmt.Errorf("look up the admin group %q: gid %q: %w", group, g.Gid, err)
	}
	return web.Admins{UID: uint32(os.Geteuid()), GID: uint32(gid), GroupName: group}, nil
}
