// Package cli implements the `labpool <verb>` commands. Every verb is a
// client of the daemon's local API on the data directory's unix socket;
// read-only verbs fall back to reading the replica when no daemon runs.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"

	"github.com/labpool/labpool/app/web"
	"github.com/spf13/cobra"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1 // a failure the message explains
	ExitUsage   = 2 // bad usage
)

// DaemonOptions are the flags of the verbs that run a daemon.
type DaemonOptions struct {
	DataDir string
	Listen  string   // QUIC (UDP) address for peers
	Name    string   // this machine's name in the pool
	Ifaces  []string // interfaces for mDNS; empty = all
	// Metrics is where `agent --metrics` serves Prometheus metrics;
	// MetricsAllowRemote lets it be a non-loopback address.
	// MetricsHosts are further names a request may call it by then
	// (metrics.Config.Hosts).
	Metrics            string
	MetricsAllowRemote bool
	MetricsHosts       []string
	// Slurm is `agent --slurm`: true stands for the Slurm cluster whose
	// clients (sbatch, squeue, sinfo on PATH, SLURM_CONF) work here; false
	// never does; nil (no flag) does when sinfo answers and no Docker
	// engine is reachable. SlurmDir holds the batch scripts and the jobs'
	// output ("": DATA/slurm).
	Slurm    *bool
	SlurmDir string
	// SlurmJobUser is the Unix account members' Slurm jobs run as when
	// the policy maps them to none (agent --slurm-job-user).
	SlurmJobUser string
	// SystemSocket is where `agent --system` also serves the machine's
	// admins (SystemSocket()); "" for every other agent.
	SystemSocket string
	// AttachSocket is the system agent's socket that `web` serves the UI
	// for, when one runs and no data directory was named (Attach).
	AttachSocket string
}

// Hooks run the long-lived verbs; main wires them to app/daemon so that this
// package stays a client.
type Hooks struct {
	// Agent runs the headless daemon until ctx is cancelled.
	Agent func(ctx context.Context, opts DaemonOptions) error
	// Web serves the UI on httpAddr, attached to the running daemon or with
	// one in-process.
	Web func(ctx context.Context, opts DaemonOptions, httpAddr string) error
	// Version is the build's version.
	Version string
}

type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Main runs the CLI with args (without the program name) and returns the
// exit status.
func Main(args []string, hooks Hooks, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(hooks)
	root.SetArgs(args)
	// Every string printed may come from another machine: see escape.go.
	out, errOut := newEscWriter(stdout), newEscWriter(stderr)
	defer out.Flush()
	defer errOut.Flush()
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(errOut, "labpool:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	return ExitFailure
}

type globals struct {
	dataDir   string
	dataGiven bool // --data or LABPOOL_DATA named it: never the system agent's
	json      bool
}

func newRoot(hooks Hooks) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "labpool",
		Short:         "Pool a lab's GPU machines, with no server",
		Long:          "labpool joins the GPU machines of a LAN into one pool: live GPU meters, history, and\nthe state of every machine cached locally so it can be watched offline.",
		Version:       hooks.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			g.dataGiven = g.dataDir != ""
			if g.dataDir == "" {
				g.dataDir = DefaultDataDir()
			}
			abs, err := filepath.Abs(g.dataDir)
			if err != nil {
				return err
			}
			g.dataDir = abs
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.dataDir, "data", os.Getenv("LABPOOL_DATA"), "data directory: identity, replica, socket (env LABPOOL_DATA)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		agentCmd(g, hooks), webCmd(g, hooks), poolCmd(g),
		nodesCmd(g), gpusCmd(g), gpuCmd(g), historyCmd(g), watchCmd(g), debugCmd(g), quitCmd(g), policyCmd(g), versionCmd(g, hooks),
	)
	root.AddCommand(jobCmds(g)...)
	root.AddCommand(folderCmds(g)...)
	root.AddCommand(reportCmd(g))
	root.AddCommand(alertsCmd(g))
	root.AddCommand(reserveCmds(g)...)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	// Without Args and RunE of its own, cobra rejects an unknown verb with
	// a plain error (exit 1) rather than a usage error.
	root.Args = noSubcommand
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return root
}

// wrapArgs turns argument-count errors into usage errors, recursively.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	} else if c.HasSubCommands() {
		c.Args = noSubcommand
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			return usageError{errors.New("a subcommand is required; see " + cmd.CommandPath() + " --help")}
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// noSubcommand rejects an argument of a command that only has subcommands:
// it names none of them.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usageError{errors.New(msg)}
}

// noSystemAgent refuses a user's own agent, started with no data directory
// named, where the system agent serves this machine: the machine would be
// in the pool twice, and its GPUs offered by two agents.
func (g *globals) noSystemAgent(ctx context.Context) error {
	if g.dataGiven {
		return nil
	}
	sock, system, err := Attach(ctx, SystemSocket(), g.dataDir)
	switch {
	case err != nil:
		return fmt.Errorf("start an agent of your own: %w", err)
	case system:
		return fmt.Errorf("the labpool system agent already serves this machine (%s): the CLI and the window use it; "+
			"a second agent needs its own --data and --listen", sock)
	}
	return nil
}

// DefaultDataDir is where labpool keeps its state when --data and
// LABPOOL_DATA are not given: by this OS's convention (defaultDataDir).
func DefaultDataDir() string {
	home, _ := os.UserHomeDir()
	return defaultDataDir(goruntime.GOOS, os.Geteuid(), os.Getenv, home)
}

// defaultDataDir is DefaultDataDir for an OS (goos), a user (euid: 0 is
// root; -1 on Windows), the environment and the home directory: XDG's
// data directory on Linux (/var/lib/labpool for root), the user's
// Application Support on macOS, %LOCALAPPDATA% on Windows (its ACL admits
// only the user, SYSTEM and Administrators). The separator is the OS's,
// whatever this machine's is, so that the rule is testable anywhere.
func defaultDataDir(goos string, euid int, getenv func(string) string, home string) string {
	join := func(elem ...string) string {
		if goos == "windows" {
			return strings.Join(elem, `\`)
		}
		return path.Join(elem...)
	}
	switch {
	case goos == "windows" && getenv("LOCALAPPDATA") != "":
		return join(getenv("LOCALAPPDATA"), "labpool")
	case euid == 0 && goos == "linux":
		return "/var/lib/labpool"
	case home == "":
		return ".labpool"
	case goos == "windows":
		return join(home, "AppData", "Local", "labpool")
	case goos == "darwin":
		return join(home, "Library", "Application Support", "labpool")
	case getenv("XDG_DATA_HOME") != "":
		return join(getenv("XDG_DATA_HOME"), "labpool")
	}
	return join(home, ".local", "share", "labpool")
}

// SocketPath is the local API's unix socket in a data directory.
func SocketPath(dataDir string) string { return filepath.Join(dataDir, "labpool.sock") }

func daemonFlags(c *cobra.Command, o *DaemonOptions, listenName string) {
	c.Flags().StringVar(&o.Listen, listenName, ":7420", "UDP address for QUIC connections from peers")
	c.Flags().StringVar(&o.Name, "name", "", "this machine's name in the pool (default: the host name)")
	c.Flags().StringSliceVar(&o.Ifaces, "iface", nil, "network interfaces for mDNS (repeatable; default all)")
}

func agentCmd(g *globals, hooks Hooks) *cobra.Command {
	var o DaemonOptions
	var slurm, system bool
	c := &cobra.Command{
		Use:   "agent",
		Short: "Run the daemon: advertise this machine, serve its GPUs, follow the pool",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DataDir = g.dataDir
			if err := checkMetrics(o); err != nil {
				return err
			}
			if system {
				o.SystemSocket = SystemSocket()
			} else if err := g.noSystemAgent(cmd.Context()); err != nil {
				return err
			}
			if cmd.Flags().Changed("slurm") {
				o.Slurm = &slurm
			}
			return hooks.Agent(cmd.Context(), o)
		},
	}
	daemonFlags(c, &o, "listen")
	metricsFlags(c, &o)
	c.Flags().BoolVar(&slurm, "slurm", false, "stand for the Slurm cluster this machine submits to: jobs run through sbatch (SLURM_CONF and the Slurm commands on PATH); "+
		"without the flag, when sinfo answers and no Docker engine is reachable; --slurm=false never")
	c.Flags().BoolVar(&system, "system", false, "be this machine's system agent (the labpool package's service): also serve the local API on "+
		web.SystemSocket+" (mode 0660) to root and the members of group "+web.AdminGroup)
	c.Flags().StringVar(&o.SlurmDir, "slurm-dir", "", "where the agent keeps its records of a cluster's jobs: its own, closed to job accounts (default DATA/slurm)")
	c.Flags().StringVar(&o.SlurmJobUser, "slurm-job-user", "labpool-jobs", "the Unix account members' Slurm jobs run as unless the policy gives them their own (policy --slurm-user); "+
		"never the agent's own user: jobs run, write and read in its home")
	return c
}

func webCmd(g *globals, hooks Hooks) *cobra.Command {
	var o DaemonOptions
	var addr string
	c := &cobra.Command{
		Use:   "web",
		Short: "Serve the labpool UI to a browser on a loopback address",
		Long: `Serve the labpool UI to a browser on a loopback address.

The last line it prints is the URL to open, http://127.0.0.1:PORT/?token=SECRET,
with a secret made at each start. The page keeps the secret in a cookie and
drops it from the address bar; scripts send it as "Authorization: Bearer SECRET".
Reach it from another machine through ssh -L, never by listening beyond
loopback. "labpool policy" answers only on the local socket, not here.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DataDir = g.dataDir
			if sock, system, err := g.socket(cmd.Context()); err != nil {
				return err
			} else if system {
				o.AttachSocket = sock
			}
			return hooks.Web(cmd.Context(), o, addr)
		},
	}
	c.Flags().StringVar(&addr, "listen", "127.0.0.1:7421", "TCP address of the web UI")
	daemonFlags(c, &o, "peer-listen")
	return c
}
