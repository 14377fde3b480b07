//go:build !headless

package main

import (
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/cli"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/app/window"
	"github.com/labpool/labpool/internal/procs"
	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"
	"github.com/wailsapp/wails/v2/pkg/runtime"
)

func init() { openWindow = runWindow }

// appIcon is the window's icon on Linux, 256×256 (GDK drops larger ones from
// _NET_WM_ICON); macOS and Windows take theirs from the bundle that wails
// build packs from build/. Drawn by build/appicon.go.
//
//go:embed build/linux/labpool.png
var appIcon []byte

// runWindow opens the labpool window over this machine's daemon: the one
// already serving the data directory, or a background agent it starts.
func runWindow(assets fs.FS, log *slog.Logger) int {
	procs.SetIdle(1) // the relay, and the daemon when it runs in this process
	dataDir := os.Getenv("LABPOOL_DATA")
	if dataDir == "" {
		dataDir = cli.DefaultDataDir()
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cfg := daemonConfig(cli.DaemonOptions{DataDir: dataDir, Listen: os.Getenv("LABPOOL_LISTEN")})
	socket, done, err := ensureAgent(ctx, cfg, systemSocket(), log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labpool:", err)
		return cli.ExitFailure
	}
	wcfg := window.DefaultConfig()
	if sys := systemSocket(); sys == "" || socket != sys {
		// The agent this window started (or attached to) may be stopped
		// later (`labpool agent stop`, a crash): the page offers to start
		// it again. The system agent is the service manager's to start.
		wcfg.DataDir = cfg.DataDir
		wcfg.StartDaemon = func(ctx context.Context) error {
			if answers(ctx, socket) {
				return nil
			}
			_, err := startAgent(ctx, cfg, socket)
			return err
		}
	}
	wcfg.SelfTest = os.Getenv("LABPOOL_SELFTEST")
	wcfg.SelfTestJob = os.Getenv("LABPOOL_SELFTEST_JOB")
	wcfg.SelfTestAlert = os.Getenv("LABPOOL_SELFTEST_ALERT") != ""
	if d, err := time.ParseDuration(os.Getenv("LABPOOL_SELFTEST_LINGER")); err == nil && d > 0 {
		wcfg.SelfTestLinger = d // the e2e test checks a notification meanwhile
	}
	// The page calls the local API as in a browser: the AssetServer serves
	// its files and passes the rest to win, which passes /api/ on to the
	// daemon's socket.
	win := window.New(socket, wcfg)
	var relay sync.WaitGroup // win.Run, from the window's start until stop
	err = wails.Run(&options.App{
		Title:       "labpool",
		Width:       1280,
		Height:      800,
		MinWidth:    720,
		MinHeight:   480,
		AssetServer: &assetserver.Options{Assets: assets, Handler: win},
		Linux: &linux.Options{
			Icon:        appIcon,
			ProgramName: "labpool", // WM_CLASS, matched by build/linux/labpool.desktop
			// What Wails picks when Linux is nil (wailsapp/wails#2977); a
			// non-nil Options would otherwise switch to on-demand.
			WebviewGpuPolicy: linux.WebviewGpuPolicyNever,
		},
		OnStartup: func(wctx context.Context) {
			relay.Go(func() {
				if err := win.Run(ctx, wailsPage{wctx}); err != nil {
					log.Warn("window", "err", err)
				}
			})
			if app.SessionBus() { // desktop notifications of new alerts (none without a session bus)
				relay.Go(func() { app.RunAlertNotifications(ctx, web.NewClient(socket), app.GDBusNotifier{}, log) })
				relay.Go(func() { app.RunReservationNotifications(ctx, web.NewClient(socket), app.GDBusNotifier{}, log) })
			}
		},
	})
	stop()
	relay.Wait()
	if derr := done(); derr != nil {
		log.Error("daemon", "err", derr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labpool: window:", err)
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// wailsPage is the window as app/window drives it, through the Wails
// runtime context captured once at startup.
type wailsPage struct{ ctx context.Context }

func (p wailsPage) Quit() { runtime.Quit(p.ctx) }
