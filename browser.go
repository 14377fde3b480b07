package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/labpool/labpool/app/cli"
	"github.com/labpool/labpool/app/daemon"
)

// openInBrowser is `labpool` with no arguments in the headless build (the
// laptop path on macOS and Windows): it starts the agent in the background
// when none serves the data directory (ensureAgent: the agent is always
// spawned here, never by a LaunchAgent, whose LAN traffic macOS blocks),
// serves the UI on loopback for it, and opens that in the default browser.
// It serves until interrupted; the agent keeps running (`labpool quit`).
func openInBrowser(assets fs.FS, log *slog.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dataDir := os.Getenv("LABPOOL_DATA")
	if dataDir == "" {
		dataDir = cli.DefaultDataDir()
	}
	cfg := daemonConfig(cli.DaemonOptions{DataDir: dataDir, Listen: os.Getenv("LABPOOL_LISTEN")})
	socket, done, err := ensureAgent(ctx, cfg, systemSocket(), log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labpool: start the agent for %s: %v\n", dataDir, err)
		return 1
	}
	defer done()
	cfg.AttachSocket = socket // the system agent's, where it serves this user
	out := &urlOpener{open: func(url string) {
		fmt.Printf("labpool's UI: %s\n(Ctrl-C stops serving it; the agent keeps running: `labpool quit` stops it)\n", url)
		if err := browserCommand(runtime.GOOS, url).Start(); err != nil {
			fmt.Fprintf(os.Stderr, "labpool: open the browser (%v): open the address above yourself\n", err)
		}
	}}
	if err := daemon.RunWebTo(ctx, cfg, "127.0.0.1:0", assets, log, out); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "labpool: serve the UI: %v\n", err)
		return 1
	}
	return 0
}

// urlOpener is the writer RunWebTo prints the UI's address to: it opens
// the first line.
type urlOpener struct {
	buf    bytes.Buffer
	opened bool
	open   func(url string)
}

func (u *urlOpener) Write(p []byte) (int, error) {
	if u.opened {
		return len(p), nil
	}
	u.buf.Write(p)
	if line, _, ok := strings.Cut(u.buf.String(), "\n"); ok {
		u.opened = true
		u.open(strings.TrimSpace(line))
	}
	return len(p), nil
}

var _ io.Writer = (*urlOpener)(nil)

// browserCommand opens url in the default browser of an OS (goos). On
// Windows it goes through url.dll, not `cmd /c start`, whose parser would
// split the address at its & and ^.
func browserCommand(goos, url string) *exec.Cmd {
	switch goos {
	case "darwin":
		return exec.Command("open", url)
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	}
	return exec.Command("xdg-open", url)
}
