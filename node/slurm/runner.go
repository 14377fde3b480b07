package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Runner runs one of Slurm's commands and returns its standard output.
// An error carries the command's standard error. Tests replace it with
// recorded output (see RunnerFunc).
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// As is who runs a command, and what it is given: the executor runs
// sbatch, scancel and job steps as the job's account, never as the
// agent's own user.
type As struct {
	User  string   // the Unix account
	Stdin []byte   // the command's standard input (sbatch reads its script here)
	Env   []string // NAME=VALUE added to its environment, never to argv
}

// AsRunner is a Runner that also runs commands as another Unix user.
type AsRunner interface {
	Runner
	RunAs(ctx context.Context, as As, name string, args ...string) ([]byte, error)
}

// RunnerFunc is a Runner from a function.
type RunnerFunc func(ctx context.Context, name string, args ...string) ([]byte, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	return f(ctx, name, args...)
}

// CmdRunner runs Slurm's commands as processes.
type CmdRunner struct {
	// Conf is slurm.conf, passed as SLURM_CONF; "" leaves the client's
	// default (/etc/slurm/slurm.conf or configless).
	Conf string
	// Wrap is put before every command line (for example nsenter into a
	// network namespace in tests); empty for none.
	Wrap []string
	// Timeout bounds one command (default 30 s).
	Timeout time.Duration
	// Usage, when set, is told the CPU time of each command that ran.
	Usage func(name string, user, sys time.Duration)
	// Switch is how RunAs becomes another user: SwitchSetpriv (the agent
	// is root) or SwitchSudo (sudo -n -u USER, with the sudoers rule of
	// the README); "" picks setpriv for root, sudo otherwise.
	Switch string
	// Opener is the command that opens a job's output as its account
	// for OpenAs through sudo: the labpool binary and OpenOutputVerb.
	// Root opens outputs itself and needs none.
	Opener []string
}

// How CmdRunner.RunAs becomes the job's account.
const (
	SwitchSetpriv = "setpriv" // setpriv --reuid --regid --init-groups (root)
	SwitchSudo    = "sudo"    // sudo -n -u USER --preserve-env=NAMES
)

var _ AsRunner = (*CmdRunner)(nil)

// Run runs name with args and returns its standard output.
func (r *CmdRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := append(append(append([]string(nil), r.Wrap...), name), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	if r.Conf != "" {
		cmd.Env = append(cmd.Env, "SLURM_CONF="+r.Conf)
	}
	return r.runCmd(ctx, cmd, name, timeout)
}

// RunAs runs name as the Unix user as.User: through setpriv when the
// agent is root, else through sudo -n (which fails at once, never
// prompts, when the sudoers rule is missing). The command gets a clean
// environment: PATH, SLURM_CONF, the user's HOME, USER and LOGNAME, and
// as.Env, never the agent's own variables.
func (r *CmdRunner) RunAs(ctx context.Context, as As, name string, args ...string) ([]byte, error) {
	if !validUserName(as.User) {
		return nil, fmt.Errorf("%s: run as %q: not a Unix user name", name, as.User)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	env := []string{"PATH=" + os.Getenv("PATH")}
	if r.Conf != "" {
		env = append(env, "SLURM_CONF="+r.Conf)
	} else if c := os.Getenv("SLURM_CONF"); c != "" {
		env = append(env, "SLURM_CONF="+c)
	}
	keep := []string{"SLURM_CONF"}
	for _, kv := range as.Env {
		k, _, _ := strings.Cut(kv, "=")
		keep = append(keep, k)
	}
	env = append(env, as.Env...)
	argv := append([]string(nil), r.Wrap...)
	switch r.switchMode() {
	case SwitchSetpriv:
		u, err := lookupAccount(as.User, nil)
		if err != nil {
			return nil, err
		}
		env = append(env, "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name)
		argv = append(argv, "setpriv", "--reuid="+strconv.FormatUint(uint64(u.UID), 10),
			"--regid="+strconv.FormatUint(uint64(u.GID), 10), "--init-groups", "--")
	default:
		argv = append(argv, "sudo", "-n", "-H", "-u", as.User, "--preserve-env="+strings.Join(keep, ","), "--")
	}
	argv = append(append(argv, name), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	if as.Stdin != nil {
		cmd.Stdin = bytes.NewReader(as.Stdin)
	}
	return r.runCmd(ctx, cmd, name, timeout)
}

// switchMode is r.Switch, or the one that fits the agent's user.
func (r *CmdRunner) switchMode() string {
	if r.Switch != "" {
		return r.Switch
	}
	if os.Geteuid() == 0 {
		return SwitchSetpriv
	}
	return SwitchSudo
}

// runCmd runs cmd and returns its standard output, or an error with its
// standard error.
func (r *CmdRunner) runCmd(ctx context.Context, cmd *exec.Cmd, name string, timeout time.Duration) ([]byte, error) {
	out, err := captured(cmd)
	if r.Usage != nil && cmd.ProcessState != nil {
		r.Usage(name, cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime())
	}
	if err != nil {
		msg := strings.TrimSpace(out.stderr)
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w (after %s): %s", name, ctx.Err(), timeout, msg)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && msg != "" {
			return nil, fmt.Errorf("%s: %s", name, msg)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out.stdout, nil
}

// cmdOutput is what a command printed.
type cmdOutput struct {
	stdout []byte
	stderr string
}

// captured runs cmd with its standard output and error in memory files
// (see memFile), or in pipes where there are none.
func captured(cmd *exec.Cmd) (cmdOutput, error) {
	stdout, err := memFile("slurm-stdout")
	if err != nil {
		return capturedPiped(cmd)
	}
	defer stdout.Close()
	stderr, err := memFile("slurm-stderr")
	if err != nil {
		return cmdOutput{}, err
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	runErr := cmd.Start()
	if runErr == nil {
		waitExit(cmd.Process.Pid)
		runErr = cmd.Wait()
	}
	var out cmdOutput
	var e []byte
	out.stdout, err = readFile(stdout)
	if err == nil {
		e, err = readFile(stderr)
	}
	out.stderr = string(e)
	if runErr != nil {
		return out, runErr
	}
	return out, err
}

// readFile reads all of f from its start.
func readFile(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err == io.EOF {
		err = nil
	}
	return b[:n], err
}

// capturedPiped runs cmd with its standard output and error in pipes.
func capturedPiped(cmd *exec.Cmd) (cmdOutput, error) {
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return cmdOutput{o.Bytes(), e.String()}, err
}
