package containers

import (
	"context"
	"io"
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// Logs returns the container's output, stdout and stderr together in the
// order Docker recorded them; with follow the stream stays open until the
// container stops or ctx ends. tail < 0 means all lines.
func (r *Runtime) Logs(ctx context.Context, id string, follow bool, tail int) (io.ReadCloser, error) {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return nil, err
	}
	t := "all"
	if tail >= 0 {
		t = strconv.Itoa(tail)
	}
	rc, err := r.api.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow, Tail: t})
	if err != nil {
		return nil, explain(err, "")
	}
	if ins.Config != nil && ins.Config.Tty {
		return rc, nil // a TTY's output is one raw stream already
	}
	return demux(rc), nil
}

// demux turns Docker's multiplexed stdout/stderr frames into one text
// stream. Closing the result closes rc, which ends the copying goroutine.
func demux(rc io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	return readCloser{pr, func() error { rc.Close(); return pr.Close() }}
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }
