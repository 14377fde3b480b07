package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// maxTailRead bounds how much of an output file a tail reads back.
const maxTailRead = 8 << 20

// Logs reads the job's output file: its last tail lines (tail <= 0: all),
// then, with follow, what the job writes until it ends or ctx ends. A
// pending job's output is empty until it runs.
func (e *Executor) Logs(ctx context.Context, handle string, follow bool, tail int) (io.ReadCloser, error) {
	if _, _, err := e.owned(ctx, handle, "read the output of"); err != nil {
		return nil, err
	}
	r := e.record(handle)
	a, err := e.outputAccount(r)
	if err != nil {
		return nil, fmt.Errorf("read output of slurm job %s: %w", handle, err)
	}
	path := r.Output
	f, err := e.openOutput(ctx, path, a)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read output of slurm job %s: %w", handle, err)
	}
	start := int64(0)
	if f != nil && tail > 0 {
		if start, err = tailOffset(f, tail); err != nil {
			f.Close()
			return nil, fmt.Errorf("read output of slurm job %s: %w", handle, err)
		}
	}
	if !follow {
		if f == nil {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		pw.CloseWithError(e.follow(ctx, handle, path, a, f, start, pw))
	}()
	return &followReader{PipeReader: pr, cancel: cancel}, nil
}

type followReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r *followReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

// follow copies the file from start, reading what was added each tick,
// until the job ends (then the rest) or ctx ends.
func (e *Executor) follow(ctx context.Context, handle, path string, a account, f *os.File, start int64, w io.Writer) error {
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	off := start
	tick := time.NewTicker(e.cfg.Tick)
	defer tick.Stop()
	for {
		state := e.state(ctx, handle)
		ended := state.Ended()
		if f == nil && state != jobs.TaskPending {
			var err error
			if f, err = e.openOutput(ctx, path, a); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("read output of slurm job %s: %w", handle, err)
			}
		}
		if f != nil {
			n, err := copyFrom(f, off, w)
			off += n
			if err != nil {
				return err
			}
		}
		if ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// outputAccount is the account whose file r's output is: a record
// written before job accounts names none, and its output (written by a
// job of the agent's own user, in the agent's directory) is not read.
func (e *Executor) outputAccount(r *record) (account, error) {
	if r == nil || r.User == "" {
		return account{}, errors.New("the job ran as the agent's own user, before job accounts: its output is not read (rule: a job's output is its account's file)")
	}
	return e.account(r.User)
}

// OpenOutputVerb is the labpool binary's hidden verb that opens a job's
// output as the job's account, for an agent that is not root (see
// ServeOpenOutput). The README's sudoers rule lets the agent's user run
// it, and nothing else of labpool, as each job account.
const OpenOutputVerb = "slurm-open-output"

// Exit statuses of OpenOutputVerb.
const (
	openSent     = 0 // the file went over standard output
	openRefused  = 1 // standard error says why
	openNotExist = 2 // no such file (yet): a job that has not started
)

// outputOpener opens a job's output as its account (CmdRunner.OpenAs):
// an agent that is not root cannot read the account's home.
type outputOpener interface {
	OpenAs(ctx context.Context, user, path string) (*os.File, error)
}

// openOutput opens the output of a job of account a: as the account
// where the runner can (an outputOpener), else as the agent; either way
// the file is checked here again (checkOutput), whoever opened it.
func (e *Executor) openOutput(ctx context.Context, path string, a account) (*os.File, error) {
	o, ok := e.run.(outputOpener)
	if !ok {
		return openOutput(path, a)
	}
	f, err := o.OpenAs(ctx, a.Name, path)
	if err != nil {
		return nil, err
	}
	if err := checkOutput(int(f.Fd()), path, a); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// state is the job's state; a job that is gone has ended (exited), and
// one that cannot be read now is still pending for all the caller knows.
func (e *Executor) state(ctx context.Context, handle string) jobs.TaskState {
	st, err := e.Inspect(ctx, handle)
	if err != nil {
		if jobs.IsTaskGone(err) {
			return jobs.TaskExited
		}
		return jobs.TaskPending
	}
	return st.State
}

// copyFrom copies f from off to its current end.
func copyFrom(f *os.File, off int64, w io.Writer) (int64, error) {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.Copy(w, f)
}

// tailOffset is where the last n lines of f start.
func tailOffset(f *os.File, n int) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	from := max(0, size-maxTailRead)
	buf := make([]byte, size-from)
	if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
		return 0, err
	}
	end := len(buf)
	if end > 0 && buf[end-1] == '\n' {
		end-- // the last line's newline does not start another line
	}
	for i := end - 1; i >= 0; i-- {
		if buf[i] == '\n' {
			n--
			if n == 0 {
				return from + int64(i) + 1, nil
			}
		}
	}
	return from, nil
}

// Stats says what Slurm knows of a job's resources: without accounting
// (sstat) Slurm reports no use, so this is what the job asked: its
// memory as the limit. CPU use and PIDs stay empty: the processes run
// on compute nodes, not here.
func (e *Executor) Stats(ctx context.Context, handle string) (jobs.TaskUsage, error) {
	if _, _, err := e.owned(ctx, handle, "read the use of"); err != nil {
		return jobs.TaskUsage{}, err
	}
	var u jobs.TaskUsage
	if r := e.record(handle); r != nil && r.MemoryB > 0 {
		u.MemLimitBytes = uint64(r.MemoryB)
	}
	return u, nil
}
