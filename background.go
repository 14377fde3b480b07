package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/labpool/labpool/app/cli"
	"github.com/labpool/labpool/app/daemon"
	"github.com/labpool/labpool/app/web"
)

// ensureAgent returns the socket of the daemon serving cfg.DataDir: the one
// running, or a background agent started now, in a process of its own so
// that copies, tunnels and this machine's place in the pool outlive the
// window (`labpool quit` stops it), from the headless build shipped beside
// the window's binary (agentBinary). Where no agent can be started, the
// daemon runs in this process and done stops it.
//
// A system agent on systemSocket (the labpool package's service; "" when
// the user named a data directory) comes first: the window attaches to it,
// or, when it refuses this user, says which group to join and starts none.
func ensureAgent(ctx context.Context, cfg daemon.Config, systemSocket string, log *slog.Logger) (socket string, done func() error, err error) {
	socket, system, err := cli.Attach(ctx, systemSocket, cfg.DataDir)
	if err != nil {
		return "", nil, err
	}
	if system {
		log.Info("attached to this machine's labpool system agent", "socket", socket)
		return socket, func() error { return nil }, nil
	}
	if answers(ctx, socket) {
		log.Info("attached to the running labpool daemon", "socket", socket)
		return socket, func() error { return nil }, nil
	}
	if os.Getenv("LABPOOL_WINDOW_DAEMON") != "inprocess" {
		bin, err := startAgent(ctx, cfg, socket)
		if _, headless := agentBinary(bin); err == nil && !headless && openWindow != nil {
			log.Warn("no "+agentBinaryName(runtime.GOOS)+" beside the window's binary: the agent runs from the window's own, "+
				"its GUI libraries loaded (about 40 MB more)", "program", bin)
		}
		if err == nil {
			log.Info("started the labpool agent in the background", "socket", socket, "program", bin,
				"log", filepath.Join(cfg.DataDir, "agent.log"))
			return socket, func() error { return nil }, nil
		}
		log.Warn("could not start a background agent: the daemon runs in this window and stops with it", "err", err)
	}
	return daemon.Ensure(ctx, cfg, log)
}

// systemSocket is the system agent's socket that the window and the
// browser path try first, or "" when the user named a data directory.
func systemSocket() string {
	if os.Getenv("LABPOOL_DATA") != "" {
		return "" // the user's own data directory, by name
	}
	return cli.SystemSocket()
}

func answers(ctx context.Context, socket string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return web.NewClient(socket).Ping(ctx) == nil
}

// startAgent runs `labpool agent` for cfg detached from this process, and
// waits until it answers; it returns the program it started.
func startAgent(ctx context.Context, cfg daemon.Config, socket string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	bin, _ := agentBinary(exe)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return bin, err
	}
	logPath := filepath.Join(cfg.DataDir, "agent.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return bin, err
	}
	defer logf.Close()
	args := []string{"--data", cfg.DataDir, "agent", "--listen", cfg.Listen}
	if cfg.Name != "" {
		args = append(args, "--name", cfg.Name)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return bin, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reap it should it end while the window is open
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		if answers(ctx, socket) {
			return bin, nil
		}
		select {
		case err := <-exited:
			return bin, fmt.Errorf("the agent (%s) exited at once (%v); see %s", bin, err, logPath)
		case <-deadline.C:
			cmd.Process.Kill()
			return bin, errors.New("the agent did not answer within 20 s; see " + logPath)
		case <-ctx.Done():
			return bin, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
