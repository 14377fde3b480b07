package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/internal/procs"
	"github.com/labpool/labpool/sync/peer"
)

// Client returns an HTTP client whose every request, whatever the URL's
// host ("https://peer/v1/..." reads well), goes to device id over this
// endpoint's socket. It dials addrs (host:port, all at once, the first
// handshake wins) and fails unless the server proves it is id. All clients
// for one peer share one QUIC connection, redialed when it dies. Non-empty
// addrs replace the addresses known for id, as SetAddrs does.
//
// The client has no timeout: bound requests with their context.
func (e *Endpoint) Client(id peer.ID, addrs []string) *http.Client {
	return &http.Client{Transport: urgentReads{rt: e.peer(id, addrs), mark: procs.UrgentFor}}
}

// controlUrgency is how long bulk work steps aside (procs.UrgentFor) after
// bytes of a control response arrive: a member's sample on the replication
// stream is written into the replica meanwhile. procs.Budget bounds what
// a busy control stream (a tunnel, logs) costs a copy.
const controlUrgency = 5 * time.Millisecond

// urgentReads marks the responses of the control path urgent as they
// arrive (DataClient's fallback to QUIC is bulk work and goes around it).
type urgentReads struct {
	rt   http.RoundTripper
	mark func(time.Duration) // procs.UrgentFor
}

func (u urgentReads) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := u.rt.RoundTrip(req)
	if err == nil {
		u.mark(controlUrgency)
		resp.Body = urgentBody{resp.Body, u.mark}
	}
	return resp, err
}

type urgentBody struct {
	io.ReadCloser
	mark func(time.Duration)
}

func (b urgentBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.mark(controlUrgency)
	}
	return n, err
}

// SetAddrs replaces the addresses dialed for id (used from the next dial on).
func (e *Endpoint) SetAddrs(id peer.ID, addrs []string) {
	e.peer(id, addrs)
}

// Drop closes the connection to id, failing its requests in flight. The
// peer's addresses are kept, and its next request dials again.
func (e *Endpoint) Drop(id peer.ID) {
	e.mu.Lock()
	p := e.peers[id]
	e.mu.Unlock()
	if p != nil {
		p.reset()
	}
}

func (e *Endpoint) peer(id peer.ID, addrs []string) *pinned {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peers[id]
	if p == nil {
		p = &pinned{e: e, id: id}
		if e.closed {
			return p // rt stays nil: every request fails as closed
		}
		p.rt = p.newTransport()
		e.peers[id] = p
	}
	if len(addrs) > 0 {
		p.setAddrs(addrs)
	}
	return p
}

// pinned is the RoundTripper of one peer.
type pinned struct {
	e  *Endpoint
	id peer.ID

	mu    sync.Mutex // guards addrs, via, rt and data
	addrs []string
	via   string           // of addrs, where a handshake last proved id
	rt    *http3.Transport // nil once closed
	data  *dataPath        // made by DataClient
}

func (p *pinned) newTransport() *http3.Transport {
	return &http3.Transport{
		TLSClientConfig: p.e.clientTLS(&p.id),
		QUICConfig:      p.e.clientQUIC(),
		Dial:            p.dial,
		Logger:          p.e.log,
	}
}

func (p *pinned) dial(ctx context.Context, _ string, tlsConf *tls.Config, qconf *quic.Config) (*quic.Conn, error) {
	p.mu.Lock()
	addrs := slices.Clone(p.addrs)
	p.mu.Unlock()
	conn, addr, err := p.e.dialFirst(ctx, addrs, tlsConf, qconf)
	if err != nil {
		return nil, fmt.Errorf("dial peer %s: %w", p.id.Short(), err)
	}
	p.proved(addr)
	return conn, nil
}

// proved records that a handshake at addr proved the peer.
func (p *pinned) proved(addr string) {
	p.mu.Lock()
	p.via = addr
	p.mu.Unlock()
}

func (p *pinned) setAddrs(addrs []string) {
	p.mu.Lock()
	p.addrs = slices.Clone(addrs)
	p.mu.Unlock()
}

// RoundTrip sends req to the pinned peer.
func (p *pinned) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	rt := p.rt
	p.mu.Unlock()
	if rt == nil {
		closeBody(req)
		return nil, fmt.Errorf("request peer %s: %w", p.id.Short(), net.ErrClosed)
	}
	resp, err := rt.RoundTrip(retarget(req))
	if err == nil {
		return resp, nil
	}
	p.mu.Lock()
	now := p.rt
	p.mu.Unlock()
	if now != nil && replayable(req, err, now != rt) {
		// The connection died under the request (the peer restarted, or
		// went silent): the transport has forgotten it, so this redials.
		// Or Drop replaced the transport (a dial under way was abandoned):
		// the new one dials.
		again, rerr := rewound(req)
		if rerr != nil {
			return nil, err
		}
		resp, err = now.RoundTrip(retarget(again))
	}
	return resp, err
}

// Retried requests. A request is sent once more, on a new connection,
// when the connection under it turns out to be dead (ConnectionLost: a
// stateless reset from a restarted peer, an idle timeout, a close) and it
// is safe to repeat: its method is idempotent (GET, HEAD, OPTIONS, PUT,
// DELETE), or its caller marked it with SafeToRetry; and its body, if it
// has one, can be read again (http.NewRequest sets GetBody for in-memory
// bodies). Anything else (a launch, a stream of bytes) fails as it is.

type safeKey struct{}

// SafeToRetry marks the requests made with the returned context as safe to
// send twice, whatever their method: repeating one does what doing it once
// does (stopping a job, for instance).
func SafeToRetry(ctx context.Context) context.Context {
	return context.WithValue(ctx, safeKey{}, true)
}

// replayable reports whether req may be sent again after err (dropped:
// the transport it went through was replaced by Drop).
func replayable(req *http.Request, err error, dropped bool) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
	default:
		if safe, _ := req.Context().Value(safeKey{}).(bool); !safe {
			return false
		}
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody && req.GetBody == nil || req.Context().Err() != nil {
		return false
	}
	return dropped || ConnectionLost(err)
}

// rewound returns req with its body read again from the start.
func rewound(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	out := *req
	out.Body = body
	return &out, nil
}

// reset replaces the transport, closing the old one's connection.
func (p *pinned) reset() {
	p.mu.Lock()
	old := p.rt
	if old != nil {
		p.rt = p.newTransport()
	}
	data := p.data
	p.mu.Unlock()
	if data != nil {
		data.close()
	}
	if old != nil {
		old.Close()
	}
}

func (p *pinned) close() {
	p.mu.Lock()
	old := p.rt
	p.rt = nil
	data := p.data
	p.mu.Unlock()
	if data != nil {
		data.close()
	}
	if old != nil {
		old.Close()
	}
}

// retarget returns a shallow copy of req aimed at serverName, so that the
// http3 transport keeps one connection whatever host the caller wrote.
func retarget(req *http.Request) *http.Request {
	out := *req
	u := *req.URL
	u.Scheme, u.Host = "https", serverName
	out.URL, out.Host = &u, ""
	return &out
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// ConnectionLost reports whether err means the connection under a request
// died (the peer restarted, or went silent), so that the request, if it can
// be sent again, may be retried once on a new connection.
func ConnectionLost(err error) bool {
	var app *quic.ApplicationError
	var reset *quic.StatelessResetError
	var idle *quic.IdleTimeoutError
	return errors.As(err, &app) || errors.As(err, &reset) || errors.As(err, &idle)
}

// Refused reports whether err is a peer's refusal of the handshake itself
// (QUIC CONNECTION_REFUSED: it takes a limited number of handshakes from
// new devices a second) or of a place at its door (the door was full, or
// made room by closing this attempt): a moment's wait helps.
func Refused(err error) bool {
	var te *quic.TransportError
	if errors.As(err, &te) && te.Remote && te.ErrorCode == quic.ConnectionRefused {
		return true
	}
	var ae *quic.ApplicationError
	if !errors.As(err, &ae) || !ae.Remote || ae.ErrorCode != errCodeRefused {
		return false
	}
	for _, rule := range doorFullRules {
		if strings.HasSuffix(ae.ErrorMessage, "(rule: "+rule+")") {
			return true
		}
	}
	return false
}

// doorFullRules are the door's refusals that a later try may pass.
var doorFullRules = []string{"door connections", "door per source", "door per network"}
