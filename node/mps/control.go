package mps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// staticMark, in a GPU's directory, says that its daemon runs with static
// SM partitioning (so that an agent that restarts and finds it running
// knows).
const staticMark = "static-partitioning"

// start starts gpu's daemon, with static SM partitioning where the driver
// has it, and says whether it does. A daemon already running (the agent
// restarted) is kept.
func (d *Daemons) start(ctx context.Context, gpu string) (bool, error) {
	if err := d.prepare(gpu); err != nil {
		return false, err
	}
	mark := filepath.Join(d.cfg.Dir, gpu, staticMark)
	if d.alive(gpu) {
		_, err := os.Stat(mark)
		return err == nil, nil
	}
	os.Remove(mark)
	errS := d.run(ctx, gpu, "", "-d", "-S")
	if errS == nil {
		errS = d.waitAlive(ctx, gpu)
	}
	if errS == nil {
		if err := os.WriteFile(mark, nil, 0o600); err != nil {
			return true, fmt.Errorf("mark the MPS daemon of %s as partitioned: %w", gpu, err)
		}
		d.log.Info("MPS control daemon started, with static SM partitioning", "gpu", gpu)
		return true, nil
	}
	err := d.run(ctx, gpu, "", "-d")
	if err == nil {
		err = d.waitAlive(ctx, gpu)
	}
	if err != nil {
		return false, fmt.Errorf("start the MPS control daemon of %s: %w (with -S: %v)", gpu, err, errS)
	}
	d.log.Info("MPS control daemon started (no static SM partitioning here: shares get thread percentages)", "gpu", gpu, "static", errS)
	return false, nil
}

// waitAlive waits, up to Config.Timeout, for the daemon that -d forked to
// write its pid file and run.
func (d *Daemons) waitAlive(ctx context.Context, gpu string) error {
	wait := d.cfg.Timeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for !d.alive(gpu) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("no daemon runs %v after it started (no live pid in %s)", wait, filepath.Join(d.dir(gpu, "pipe"), pidFile))
		case <-t.C:
		}
	}
	return nil
}

// quit tells gpu's daemon to quit, if it runs.
func (d *Daemons) quit(ctx context.Context, gpu string) error {
	if !d.alive(gpu) {
		return nil
	}
	if _, err := d.control(ctx, gpu, "quit"); err != nil {
		return fmt.Errorf("stop the MPS control daemon of %s: %w", gpu, err)
	}
	return nil
}

// control sends one command to gpu's daemon and returns its answer.
func (d *Daemons) control(ctx context.Context, gpu, line string) (string, error) {
	var out bytes.Buffer
	if err := d.runOut(ctx, gpu, line+"\n", &out); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", line, err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func (d *Daemons) run(ctx context.Context, gpu, stdin string, args ...string) error {
	var out bytes.Buffer
	if err := d.runOut(ctx, gpu, stdin, &out, args...); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// runOut runs the control program for gpu: with args, the daemon (in a
// mount namespace of its own where Config.PrivateShm); without, a control
// command read from stdin.
func (d *Daemons) runOut(ctx context.Context, gpu, stdin string, out *bytes.Buffer, args ...string) error {
	if d.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.cfg.Timeout)
		defer cancel()
	}
	name, argv := d.bin, args
	if len(args) > 0 && d.cfg.PrivateShm {
		name, argv = privateShm(d.dir(gpu, "shm"), d.bin, args)
	}
	cmd := exec.CommandContext(ctx, name, argv...)
	cmd.Env = d.env(gpu)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = d.cfg.Timeout
	if len(args) == 0 {
		return cmd.Run()
	}
	// The daemon forks and keeps what it inherited: its output goes to a
	// file, never to a pipe that Run would wait on.
	f, err := os.OpenFile(filepath.Join(d.dir(gpu, "log"), "start.out"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("open the daemon's start output: %w", err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	if b, rerr := os.ReadFile(f.Name()); rerr == nil {
		out.Write(b[:min(len(b), 4096)])
	}
	return err
}

// privateShm wraps the daemon's command line: a mount namespace of its
// own, where shm is bound on /dev/shm, so that what it shares with its
// clients is in shm, which their containers mount as their /dev/shm.
func privateShm(shm, bin string, args []string) (string, []string) {
	script := `mount --bind "$0" /dev/shm && exec "$@"`
	return "unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, shm, bin}, args...)
}

// env is the control program's environment for gpu: the agent's, less any
// CUDA_ variable, with the GPU and its directories.
func (d *Daemons) env(gpu string) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CUDA_") {
			env = append(env, e)
		}
	}
	return append(env, EnvVisible+"="+gpu, EnvPipe+"="+d.dir(gpu, "pipe"), EnvLog+"="+d.dir(gpu, "log"))
}

// prepare makes gpu's directories: the GPU's own the agent's (0700); its
// pipe, shm and log directories the clients' (0700, Config.UID and GID:
// the MPS server a client starts runs as the client's user, and writes
// all three); none of them a link.
func (d *Daemons) prepare(gpu string) error {
	if err := os.MkdirAll(d.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("make the MPS directory: %w", err)
	}
	for _, p := range []struct {
		dir   string
		owned bool
	}{{filepath.Join(d.cfg.Dir, gpu), false}, {d.dir(gpu, "log"), true}, {d.dir(gpu, "pipe"), true}, {d.dir(gpu, "shm"), true}} {
		if err := os.Mkdir(p.dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("make %s: %w", p.dir, err)
		}
		fi, err := os.Lstat(p.dir)
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("make %s: it is not a directory (%v)", p.dir, err)
		}
		if err := os.Chmod(p.dir, 0o700); err != nil {
			return fmt.Errorf("make %s owner-only: %w", p.dir, err)
		}
		if p.owned && (d.cfg.UID >= 0 || d.cfg.GID >= 0) {
			if err := os.Lchown(p.dir, d.cfg.UID, d.cfg.GID); err != nil {
				return fmt.Errorf("give %s to the jobs' user %d:%d: %w", p.dir, d.cfg.UID, d.cfg.GID, err)
			}
		}
	}
	return nil
}

// partition makes a static SM partition of gpu for a share: its part of
// the GPU's chunks, rounded down (shares add up to at most 1, so their
// partitions fit), at least one.
func (d *Daemons) partition(ctx context.Context, gpu string, share float64) (string, error) {
	ls, err := d.control(ctx, gpu, "lspart")
	if err != nil {
		return "", err
	}
	free, used, err := parseLspart(ls)
	if err != nil {
		return "", err
	}
	n := max(1, int(share*float64(free+used)+1e-9))
	if n > free {
		return "", fmt.Errorf("a share of %v is %d chunks of %s: %d are free", share, n, gpu, free)
	}
	out, err := d.control(ctx, gpu, "sm_partition add "+gpu+" "+strconv.Itoa(n))
	if err != nil {
		return "", err
	}
	return parseCreated(out)
}

// parseLspart reads the free and used chunks from lspart's first line
// ("GPU-… free chunks 9, used chunks 9, free SM 36, used SM 36").
func parseLspart(s string) (free, used int, err error) {
	for _, line := range strings.Split(s, "\n") {
		var ok1, ok2 bool
		free, ok1 = numberAfter(line, "free chunks")
		used, ok2 = numberAfter(line, "used chunks")
		if ok1 && ok2 {
			return free, used, nil
		}
	}
	return 0, 0, fmt.Errorf("read lspart: no free and used chunks in %q", strings.TrimSpace(s))
}

func numberAfter(line, label string) (int, bool) {
	_, rest, ok := strings.Cut(line, label)
	if !ok {
		return 0, false
	}
	rest = strings.TrimSpace(rest)
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.Atoi(rest[:end])
	return n, err == nil
}

// parseCreated reads the partition's ID from "Partition <ID> created".
func parseCreated(s string) (string, error) {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if id, ok := strings.CutPrefix(line, "Partition "); ok {
			if id, ok := strings.CutSuffix(id, " created"); ok && id != "" && !strings.ContainsAny(id, " \t=,") {
				return id, nil
			}
		}
	}
	return "", fmt.Errorf("read sm_partition add: no partition created in %q", strings.TrimSpace(s))
}
