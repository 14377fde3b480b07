package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// The data path carries bulk bytes (file copies) as HTTP/1.1 over TCP+TLS
// 1.3 on the TCP port of the same number as the QUIC socket, pinned exactly
// as QUIC is (the same device certificates and checks; Authorize and PeerID
// work unchanged). Go's QUIC spends far more CPU per byte than the kernel's
// TCP with TLS records of 16 KiB, and a connection of its own per request
// keeps a copy from queueing telemetry and control behind its bytes on the
// QUIC connection. Where TCP cannot get through, DataClient falls back to
// QUIC.

// dataProto is the ALPN of the data path.
const dataProto = "http/1.1"

// dataRetry is how long a peer whose TCP port did not answer is reached
// over QUIC alone before TCP is tried again.
const dataRetry = 30 * time.Second

// ErrNoDataPath means the peer's TCP data port could not be reached.
var ErrNoDataPath = errors.New("tcp data path unreachable")

// listenData binds the TCP twin of the UDP address; nil if it cannot.
func (e *Endpoint) listenData() net.Listener {
	ln, err := net.Listen("tcp", e.udp.LocalAddr().String())
	if err != nil {
		e.log.Warn("no tcp data path: copies will use quic", "err", err)
		return nil
	}
	return ln
}

func (e *Endpoint) dataServerTLS() *tls.Config {
	c := e.serverTLS()
	c.NextProtos = []string{dataProto}
	return c
}

// serveData answers h over the data path until stop is called, which
// returns once the server has closed.
func (e *Endpoint) serveData(h http.Handler) (stop func()) {
	if e.tcp == nil {
		return func() {}
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
		// An empty map turns HTTP/2 off: one TCP connection per stream
		// spreads a copy's crypto over the cores.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(newHandshakeListener(e.tcp, e.guardData(e.dataServerTLS()), e.preTLS, e.trackTCP, e.log))
	}()
	return func() {
		srv.Close() // closes e.tcp too: a later Serve is QUIC only
		<-done
	}
}

// DataAddr returns the bound TCP address of the data path, nil without one.
func (e *Endpoint) DataAddr() *net.TCPAddr {
	if e.tcp == nil {
		return nil
	}
	return e.tcp.Addr().(*net.TCPAddr)
}

// DataClient is Client for bulk transfers: requests go over the TCP data
// path to id (its addrs' TCP ports), falling back to the QUIC client where
// TCP does not get through. Use it for large bodies, not for control.
func (e *Endpoint) DataClient(id peer.ID, addrs []string) *http.Client {
	p := e.peer(id, addrs)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.data == nil {
		p.data = &dataPath{p: p, rt: p.newDataTransport()}
	}
	return &http.Client{Transport: p.data}
}

// dataPath is the RoundTripper of one peer's data path.
type dataPath struct {
	p  *pinned
	rt *http.Transport

	mu       sync.Mutex
	downTill time.Time // TCP did not answer: QUIC until then
}

func (p *pinned) newDataTransport() *http.Transport {
	return &http.Transport{
		DialTLSContext:        p.dialData,
		ForceAttemptHTTP2:     false,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 0, // bounded by the request's context
		WriteBufferSize:       256 << 10,
		ReadBufferSize:        256 << 10,
		DisableCompression:    true,
	}
}

// RoundTrip sends req over TCP, or over QUIC while TCP is down.
func (d *dataPath) RoundTrip(req *http.Request) (*http.Response, error) {
	d.p.mu.Lock()
	closed := d.p.rt == nil
	d.p.mu.Unlock()
	if closed {
		closeBody(req)
		return nil, fmt.Errorf("request peer %s: %w", d.p.id.Short(), net.ErrClosed)
	}
	d.mu.Lock()
	down := time.Now().Before(d.downTill)
	d.mu.Unlock()
	if down {
		return d.p.RoundTrip(req)
	}
	resp, err := d.rt.RoundTrip(retarget(req))
	if err != nil && errors.Is(err, ErrNoDataPath) && req.Context().Err() == nil {
		// Nothing was sent: the request goes over QUIC instead, with its
		// body afresh (the failed attempt closed it).
		d.mu.Lock()
		d.downTill = time.Now().Add(dataRetry)
		d.mu.Unlock()
		d.p.e.log.Debug("tcp data path down: using quic", "peer", d.p.id.Short(), "err", err)
		again := req
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, berr := req.GetBody()
			if berr != nil {
				return nil, err
			}
			again = req.Clone(req.Context())
			again.Body = body
		}
		return d.p.RoundTrip(again)
	}
	return resp, err
}

// dialData connects to the peer's TCP port at all its addresses at once;
// the first pinned handshake wins.
func (p *pinned) dialData(ctx context.Context, _, _ string) (net.Conn, error) {
	p.mu.Lock()
	addrs := slices.Clone(p.addrs)
	p.mu.Unlock()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no address known", ErrNoDataPath)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	won, addr, err := firstOf(ctx, addrs, p.dialDataOne, func(c net.Conn) { c.Close() })
	if err != nil {
		if errors.Is(err, ErrWrongPeer) {
			return nil, err // someone else answers there: no fallback hides that
		}
		return nil, fmt.Errorf("%w: %v", ErrNoDataPath, err)
	}
	p.proved(addr)
	return won, nil
}

func (p *pinned) dialDataOne(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	conf := p.e.clientTLS(&p.id)
	conf.NextProtos = []string{dataProto}
	tc := &trackedConn{Conn: raw, e: p.e}
	c := tls.Client(tc, conf)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("tls with %s: %w", addr, err)
	}
	tc.track(p.id)
	return c, nil
}

func (d *dataPath) close() { d.rt.CloseIdleConnections() }

// CloseIdleConnections drops the data path's kept connections (those made
// from an address this machine may no longer have); http.Client's
// CloseIdleConnections calls it.
func (d *dataPath) CloseIdleConnections() { d.close() }
