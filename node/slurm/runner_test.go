//go:build linux

package slurm

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCmdRunner(t *testing.T) {
	r := &CmdRunner{}
	out, err := r.Run(context.Background(), "sh", "-c", "printf 'out\\n'; printf 'warn\\n' >&2")
	if err != nil || string(out) != "out\n" {
		t.Errorf("Run = %q, %v; want \"out\\n\"", out, err)
	}
	_, err = r.Run(context.Background(), "sh", "-c", "echo 'squeue: error: Invalid job id specified' >&2; exit 1")
	if err == nil || err.Error() != "sh: squeue: error: Invalid job id specified" {
		t.Errorf("a failed command = %v, want its standard error", err)
	}
	slow := &CmdRunner{Timeout: 50 * time.Millisecond}
	if _, err := slow.Run(context.Background(), "sleep", "30"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a command past its timeout = %v, want the deadline", err)
	}
	big := strings.Repeat("x", 200_000)
	out, err = r.Run(context.Background(), "head", "-c", "200000", "/dev/zero")
	if err != nil || strings.ReplaceAll(string(out), "\x00", "x") != big {
		t.Errorf("Run of 200,000 bytes = %d bytes, %v", len(out), err)
	}
}

// BenchmarkCmdRunner is the agent's own CPU (not the child's) to run a
// command that prints as much as the poll's squeue does for 1,000 jobs
// (45 kB), its output in memory files (memfd) or in pipes.
func BenchmarkCmdRunner(b *testing.B) {
	path, err := exec.LookPath("head")
	if err != nil {
		b.Skip("no head")
	}
	for _, v := range []struct {
		name string
		run  func(*exec.Cmd) (cmdOutput, error)
	}{{"memfd", captured}, {"pipe", capturedPiped}} {
		b.Run(v.name, func(b *testing.B) {
			self := selfCPU()
			for b.Loop() {
				out, err := v.run(exec.Command(path, "-c", "45000", "/dev/zero"))
				if err != nil || len(out.stdout) != 45000 {
					b.Fatal(len(out.stdout), err)
				}
			}
			b.ReportMetric(float64((selfCPU()-self).Microseconds())/float64(b.N), "agent-cpu-us/op")
		})
	}
}

// TestWaitExitAfterExit: a process that exited before its wait began is
// seen at once (the poller's edge came before the wait).
func TestWaitExitAfterExit(t *testing.T) {
	for range 50 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var st unix.Siginfo
		// Wait for the exit without reaping it: the pid stays valid.
		if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &st, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
			t.Fatal(err)
		}
		waitExit(cmd.Process.Pid)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
