package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// running reports whether a daemon answers on dataDir's socket.
func running(ctx context.Context, dataDir string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return app.NewClient(Socket(dataDir)).Ping(ctx) == nil
}

// Ensure makes sure a daemon serves cfg.DataDir: the one already running, or
// a new one in this process. It returns the socket and a func that stops the
// in-process daemon (after ctx is cancelled) and returns its error.
func Ensure(ctx context.Context, cfg Config, log *slog.Logger) (string, func() error, error) {
	sock := Socket(cfg.DataDir)
	if running(ctx, cfg.DataDir) {
		log.Info("attached to the running labpool daemon", "socket", sock)
		return sock, func() error { return nil }, nil
	}
	readyc := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, cfg, log, func(*Daemon) { close(readyc) })
	}()
	select {
	case <-readyc:
		return sock, func() error { return <-errc }, nil
	case err := <-errc:
		return "", nil, err
	}
}

// RunWeb serves the UI and the local API on addr (loopback TCP) until ctx is
// cancelled: proxied to the daemon already serving cfg.DataDir, or with one
// in this process.
func RunWeb(ctx context.Context, cfg Config, addr string, assets fs.FS, log *slog.Logger) error {
	if err := checkLoopback(addr); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer l.Close()
	if running(ctx, cfg.DataDir) {
		log.Info("serving the web UI for the running daemon", "url", "http://"+l.Addr().String())
		srv := &http.Server{Handler: attachedHandler(Socket(cfg.DataDir), assets), ReadHeaderTimeout: 10 * time.Second,
			BaseContext: func(net.Listener) context.Context { return ctx }}
		return serveUntil(ctx, srv, l)
	}
	d, err := open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.close()
	srv := &http.Server{Handler: web.Handler(d.svc, assets, log), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	log.Info("serving the web UI", "url", "http://"+l.Addr().String())
	return d.run(ctx, nil, func(ctx context.Context) error { return serveUntil(ctx, srv, l) })
}

// checkLoopback refuses to serve the UI beyond this machine: the local API
// has no authentication of its own.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("web address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("the web UI listens on loopback only (for example 127.0.0.1:7421); reach it from elsewhere through ssh -L")
	}
	return nil
}

// attachedHandler serves assets and proxies /api/ to the daemon's socket.
func attachedHandler(sock string, assets fs.FS) http.Handler {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: "labpool"})
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
		FlushInterval: -1,
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", proxy)
	mux.Handle("/", http.FileServerFS(assets))
	return mux
}
