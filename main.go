// Command labpool pools a lab's GPU machines: with no arguments it opens the
// window (desktop build) or the UI in the browser (headless build), starting
// the agent if none runs; with a verb it is the CLI or the daemon.
package main

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/labpool/labpool/app/cli"
	"github.com/labpool/labpool/app/daemon"
	"github.com/labpool/labpool/internal/procs"
	"github.com/labpool/labpool/node/slurm"
)

//go:embed all:frontend/dist
var dist embed.FS

// version is set with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// openWindow opens the desktop UI; nil in the headless build.
var openWindow func(assets fs.FS, log *slog.Logger) int

func main() {
	if len(os.Args) > 1 && os.Args[1] == slurm.OpenOutputVerb { // run by a Slurm agent, as a job's account
		os.Exit(slurm.ServeOpenOutput(os.Args[2:], os.Stdout, os.Stderr))
	}
	log := newLogger()
	startProfile(log)
	startPprof(log)
	assets, err := fs.Sub(dist, "frontend/dist")
	if err != nil {
		panic(err)
	}
	if len(os.Args) == 1 && openWindow != nil {
		os.Exit(openWindow(assets, log))
	}
	if len(os.Args) == 1 { // the headless build: the agent, and the UI in the browser
		os.Exit(openInBrowser(assets, log))
	}
	hooks := cli.Hooks{
		Version: version,
		Agent: func(ctx context.Context, o cli.DaemonOptions) error {
			procs.SetIdle(1) // an idle agent on one P: see procs
			cfg := daemonConfig(o)
			cfg.Slurm, cfg.SlurmDir, cfg.SlurmJobUser = daemon.SlurmAuto, o.SlurmDir, o.SlurmJobUser
			if o.Slurm != nil && *o.Slurm {
				cfg.Slurm = daemon.SlurmOn
			} else if o.Slurm != nil {
				cfg.Slurm = daemon.SlurmOff
			}
			return daemon.Run(ctx, cfg, log, nil)
		},
		Web: func(ctx context.Context, o cli.DaemonOptions, addr string) error {
			procs.SetIdle(1)
			return daemon.RunWeb(ctx, daemonConfig(o), addr, assets, log)
		},
	}
	os.Exit(cli.Main(os.Args[1:], hooks, os.Stdout, os.Stderr))
}

func daemonConfig(o cli.DaemonOptions) daemon.Config {
	cfg := daemon.DefaultConfig()
	cfg.DataDir, cfg.Name, cfg.Ifaces, cfg.Version = o.DataDir, o.Name, o.Ifaces, version
	cfg.Metrics, cfg.MetricsAllowRemote, cfg.MetricsHosts = o.Metrics, o.MetricsAllowRemote, o.MetricsHosts
	cfg.SystemSocket, cfg.AttachSocket = o.SystemSocket, o.AttachSocket
	if o.Listen != "" {
		cfg.Listen = o.Listen
	}
	cfg.SimulateGPUs, _ = strconv.Atoi(os.Getenv("LABPOOL_SIMULATE_GPUS"))
	cfg.GPUsByEnv = os.Getenv("LABPOOL_GPU_REQUEST") == "env"
	cfg.QUICOnly = os.Getenv("LABPOOL_DATA_PATH") == "quic"
	return cfg
}

// newLogger logs text to stderr at the level of LABPOOL_LOG (debug, info,
// warn, error; default info).
func newLogger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(os.Getenv("LABPOOL_LOG")))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
