package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Runner runs one of Slurm's commands and returns its standard output.
// An error carries the command's standard error. Tests replace it with
// recorded output (see RunnerFunc).
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
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
}

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
	out, err := captured(cmd)
	if r.Usage != nil && cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.Usage(name, time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()))
		}
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
