package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// ServeTunnel splices one tunnelled connection: the request body flows to
// the TCP service at addr (a job's port at its container's address, see
// PortAddr), and what the service sends flows back as the response body.
// Over HTTP/3 request and response stream at once, so one QUIC stream
// carries one TCP connection.
func ServeTunnel(w http.ResponseWriter, r *http.Request, addr string) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		writeError(w, http.StatusBadGateway, "unreachable", "the job's port does not answer: "+err.Error())
		return
	}
	defer c.Close()
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(c, r.Body)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite() // the client finished sending
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				break
			}
			fl.Flush()
		}
		if err != nil {
			break
		}
	}
	c.Close()
	<-done
}

// PortAddr is where the agent dials port of job j for a tunnel: where the
// executor says the task's ports are (a container's address on its own
// network, read now: it changes when the container restarts; the compute
// node a cluster job runs on). Only a running job's declared ports are
// dialed: ErrNoPort when j does not run or offers no such port.
func (m *Manager) PortAddr(ctx context.Context, j Job, port int) (string, error) {
	_, offered := j.Ports[port]
	if j.State != Running || !offered || j.Container == "" || m.ex == nil {
		return "", fmt.Errorf("%w: job %s is not running with port %d published", ErrNoPort, j.Name, port)
	}
	t, err := m.ex.Inspect(ctx, j.Container)
	if err != nil {
		return "", fmt.Errorf("find job %s: %w", j.Name, err)
	}
	p, ok := t.Ports[port]
	if t.State != TaskRunning || t.Addr == "" || !ok || p <= 0 || p > 65535 {
		return "", fmt.Errorf("%w: job %s is not running with port %d published", ErrNoPort, j.Name, port)
	}
	if h, ok := m.ex.(PortHolder); ok {
		if err := h.HoldsPort(ctx, j.Container, port); err != nil {
			return "", fmt.Errorf("%w: job %s: %v", ErrNoPort, j.Name, err)
		}
	}
	return net.JoinHostPort(t.Addr, strconv.Itoa(p)), nil
}

// ErrNoPort means a tunnel asks a port that the job does not offer now.
var ErrNoPort = errors.New("no such port")
