package daemon

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/sync/peer"
)

// running reports whether a daemon answers on dataDir's socket.
func running(ctx context.Context, dataDir string) bool { return answers(ctx, Socket(dataDir)) }

// answers reports whether a daemon answers on sock.
func answers(ctx context.Context, sock string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return web.NewClient(sock).Ping(ctx) == nil
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
// in this process. Once it serves, it prints the URL to open, with this run's
// token, as the last line on stdout.
func RunWeb(ctx context.Context, cfg Config, addr string, assets fs.FS, log *slog.Logger) error {
	return runWeb(ctx, cfg, addr, assets, log, os.Stdout)
}

// RunWebTo is RunWeb writing the UI's address to out instead of standard
// output (`labpool` with no arguments opens it in the browser).
func RunWebTo(ctx context.Context, cfg Config, addr string, assets fs.FS, log *slog.Logger, out io.Writer) error {
	return runWeb(ctx, cfg, addr, assets, log, out)
}

func runWeb(ctx context.Context, cfg Config, addr string, assets fs.FS, log *slog.Logger, out io.Writer) error {
	if err := web.CheckLoopback(addr); err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer l.Close()
	door, err := web.NewDoor(addr, l.Addr())
	if err != nil {
		return err
	}
	sock, dataDir := Socket(cfg.DataDir), cfg.DataDir
	if cfg.AttachSocket != "" {
		sock, dataDir = cfg.AttachSocket, "" // the system agent's replica is not ours to open
	}
	if answers(ctx, sock) {
		log.Info("serving the web UI for the running daemon", "addr", l.Addr().String(), "socket", sock)
		srv := &http.Server{Handler: web.Guard(web.AttachedHandler(sock, dataDir, assets), door.Guard),
			ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
		fmt.Fprintln(out, door.URL)
		return serveUntil(ctx, srv, l)
	}
	d, err := open(ctx, cfg, log) // tightens the data directory first
	if err != nil {
		return err
	}
	defer d.close()
	srv := &http.Server{Handler: web.Guard(web.Handler(d.svc, assets, log), door.Guard),
		ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	log.Info("serving the web UI", "addr", l.Addr().String())
	printURL := func(*Daemon) { fmt.Fprintln(out, door.URL) }
	return d.run(ctx, printURL, func(ctx context.Context) error { return serveUntil(ctx, srv, l) })
}

// secureDataDir takes group and other permissions away from the data
// directory and its files (on Windows, every user's but this one's, with
// an owner-only DACL), and logs what it changed.
func secureDataDir(dir string, log *slog.Logger) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return // open reports it
	}
	fixed, err := peer.SecureDir(dir)
	for _, f := range fixed {
		log.Warn("tightened the data directory: other users could read it", "file", f)
	}
	if err != nil {
		log.Warn("tighten the data directory", "err", err)
	}
	if err := peer.RestrictToOwner(dir, true); err != nil {
		log.Warn("close the data directory to other users", "err", err)
	}
}
