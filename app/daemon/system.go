package daemon

import (
	"context"
	"net"
	"net/http"
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
	a, err := web.LookupAdmins(d.cfg.AdminGroup)
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
