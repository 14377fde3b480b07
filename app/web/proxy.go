package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/labpool/labpool/app"
)

// SocketTransport returns the transport of calls to the daemon listening on
// socket (its unix socket: the host of a URL is not looked at).
func SocketTransport(socket string) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:        8,
		MaxIdleConnsPerHost: 8, // one host: the daemon
	}
}

// SocketProxy is an http.Handler that passes calls of the local API to the
// daemon and its replies back: `labpool web` attached to a running daemon
// and the desktop window (app/window) serve the page's /api/ calls with it.
//
// The caller's credentials (Authorization, Cookie) stay behind: they opened
// the door in front of the proxy, and the socket needs none. A daemon that
// does not answer is a 502 {code "unreachable"}. A reply goes on as it
// arrives: one without a length (a log, events) is flushed after every read.
type SocketProxy struct {
	// Daemon carries the calls: SocketTransport of the daemon's socket.
	Daemon http.RoundTripper
	// Relay, when set, writes the body of each 200 reply in place of
	// CopyReply, once the status and headers are written; it returns when
	// it is done with resp.
	Relay func(w http.ResponseWriter, r *http.Request, resp *http.Response)
	// LastKnown, when set, answers GET /api/v1/nodes while no daemon
	// listens on the socket (see LastKnown).
	LastKnown http.Handler
}

// NewSocketProxy returns the proxy to the daemon listening on socket.
func NewSocketProxy(socket string) *SocketProxy {
	return &SocketProxy{Daemon: SocketTransport(socket)}
}

// NewSocketProxyOf returns the proxy to the daemon of dataDir listening on
// socket, which shows the replica's last known pool while that daemon is
// stopped.
func NewSocketProxyOf(socket, dataDir string) *SocketProxy {
	return &SocketProxy{Daemon: SocketTransport(socket), LastKnown: LastKnown(dataDir)}
}

// ServeHTTP passes r to the daemon; r's context bounds the call.
func (p *SocketProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := r.Body
	if r.ContentLength == 0 {
		body = nil // nothing to send (http.NoBody or unknown but empty)
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://labpool"+r.URL.RequestURI(), body)
	if err != nil {
		WriteError(w, fmt.Errorf("%w: %v", app.ErrInvalid, err))
		return
	}
	if r.ContentLength > 0 {
		out.ContentLength = r.ContentLength
	}
	copyHeader(out.Header, r.Header)
	out.Header.Del("Authorization")
	out.Header.Del("Cookie")
	resp, err := p.Daemon.RoundTrip(out)
	if err != nil && p.LastKnown != nil && stopped(err) && r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes" {
		p.LastKnown.ServeHTTP(w, r)
		return
	}
	if err != nil {
		WriteError(w, &app.APIError{Status: http.StatusBadGateway, Code: "unreachable", Message: unreachable(err)})
		return
	}
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	if resp.StatusCode == http.StatusOK && p.Relay != nil {
		p.Relay(w, r, resp)
		return
	}
	CopyReply(w, resp)
}

// DaemonStopped is what the page reads when no daemon listens on the socket.
const DaemonStopped = "The labpool daemon on this machine is not running."

// unreachable says in a plain sentence why the daemon did not answer: the
// socket's dial error ("dial unix …: connect: no such file or directory")
// means no daemon runs, which is what the user needs to know.
func unreachable(err error) string {
	if stopped(err) {
		return DaemonStopped
	}
	return "cannot reach the labpool daemon: " + err.Error()
}

// stopped reports whether err is the socket's refusal to be dialled: no
// daemon listens.
func stopped(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// CopyReply copies resp's body to w as it arrives: a reply without a length
// is flushed after every read (when w can flush).
func CopyReply(w http.ResponseWriter, resp *http.Response) {
	if resp.ContentLength >= 0 {
		io.Copy(w, resp.Body)
		return
	}
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush() // http.ErrNotSupported: the writer sends as it gets
		}
		if err != nil {
			return
		}
	}
}

// hopHeaders are the headers of one connection, never passed on.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true, "Host": true}

// copyHeader sets dst's headers to src's but those of one connection (the
// hop headers and any that src's Connection names).
func copyHeader(dst, src http.Header) {
	named := map[string]bool{}
	for _, v := range src.Values("Connection") {
		for f := range strings.SplitSeq(v, ",") {
			named[http.CanonicalHeaderKey(strings.TrimSpace(f))] = true
		}
	}
	for k, vs := range src {
		if k = http.CanonicalHeaderKey(k); !hopHeaders[k] && !named[k] {
			dst[k] = append(dst[k][:0:0], vs...)
		}
	}
}
