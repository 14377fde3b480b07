package transport

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/sync/peer"
)

// A device that is not a member of the pool (Config.Member says so: a
// stranger, a removed device, or one whose membership has not reached us
// yet) needs from us only the join exchange: one request on a connection of
// its own. Its QUIC connections pass through the door, which holds each to
// DoorConfig whatever the device sends, so that no flood of them makes this
// device hold much memory:
//   - Streams request streams open at once (a third closes the connection)
//     and UniStreams unidirectional ones in all (HTTP/3's control and
//     QPACK streams; one more closes it);
//   - each request done, from its stream's opening to the last byte of the
//     answer, within Request (the stream is reset after that);
//   - closed once Idle has passed with no request open: QUIC's keepalives
//     and acknowledgements do not count, only requests;
//   - request headers of HeaderBytes at most;
//   - Conns such connections at once for the whole endpoint; one more is
//     closed as soon as its handshake has told us who it is.
//
// QUIC announces a connection's stream limit in the handshake, before the
// client's certificate has been seen, so members and the rest are offered
// Config.MaxStreams alike and the door enforces its own, smaller limit.
// A connection is closed with an HTTP/3 error whose reason names the rule
// ("refused: ... (rule: door streams)"). A device that becomes a member on
// a connection (it joined, or its membership reached us) leaves the door at
// its next stream and is served as members are from then on, but for its
// header limit, set when the connection opened.

// DoorConfig bounds what a device that is not a member may hold. A field
// left zero takes DefaultDoor's value.
type DoorConfig struct {
	// Streams is how many request streams one of its connections may have
	// open at once (2).
	Streams int
	// UniStreams is how many unidirectional streams one of its connections
	// may open in all (3).
	UniStreams int
	// Request bounds each of its requests, headers to the answer (5 s).
	Request time.Duration
	// Idle closes its connection once no request has been open for this
	// long (10 s).
	Idle time.Duration
	// HeaderBytes is the largest request header it may send (16 KiB).
	HeaderBytes int
	// Conns is how many of its connections, all devices that are not
	// members together, the endpoint holds at once (32).
	Conns int
}

// DefaultDoor returns the door labpool uses.
func DefaultDoor() DoorConfig {
	return DoorConfig{Streams: 2, UniStreams: 3, Request: 5 * time.Second, Idle: 10 * time.Second,
		HeaderBytes: 16 << 10, Conns: 32}
}

// orDefault is c with DefaultDoor's value in each field left zero.
func (c DoorConfig) orDefault() DoorConfig {
	d := DefaultDoor()
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	c.Streams, c.UniStreams = pick(c.Streams, d.Streams), pick(c.UniStreams, d.UniStreams)
	c.HeaderBytes, c.Conns = pick(c.HeaderBytes, d.HeaderBytes), pick(c.Conns, d.Conns)
	if c.Request <= 0 {
		c.Request = d.Request
	}
	if c.Idle <= 0 {
		c.Idle = d.Idle
	}
	return c
}

// The reasons a connection at the door is closed with.
func (c DoorConfig) tooManyStreams() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool may have %d requests open at once (rule: door streams)", c.Streams)
}

func (c DoorConfig) tooManyUniStreams() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool may open %d unidirectional streams (rule: door streams)", c.UniStreams)
}

func (c DoorConfig) idle() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool is closed after %v with no request open (rule: door idle)", c.Idle)
}

func (c DoorConfig) full() string {
	return fmt.Sprintf("refused: %d devices that are not members of the pool are connected already, try again later (rule: door connections)", c.Conns)
}

// errCodeRefused closes a connection at the door: HTTP/3's
// H3_EXCESSIVE_LOAD.
const errCodeRefused = quic.ApplicationErrorCode(http3.ErrCodeExcessiveLoad)

// door counts the connections at the door for the whole endpoint.
type door struct {
	cfg    DoorConfig
	member func(peer.ID) bool // nil: every device is a member

	mu    sync.Mutex // guards in and known
	in    int
	known map[netip.Addr]time.Time // addresses of members' connections, when last seen
}

// knownFor is how long an address is known after a member's connection
// there opened; knownMax bounds the addresses known.
const (
	knownFor = 24 * time.Hour
	knownMax = 4096
)

// remember notes that a member's connection opened at ip.
func (d *door) remember(ip netip.Addr, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.known == nil {
		d.known = map[netip.Addr]time.Time{}
	}
	if _, ok := d.known[ip]; !ok && len(d.known) >= knownMax {
		for a, at := range d.known {
			if now.Sub(at) > knownFor {
				delete(d.known, a)
			}
		}
		if len(d.known) >= knownMax {
			return
		}
	}
	d.known[ip] = now
}

// knownAddr reports whether a member's connection opened at ip lately.
func (d *door) knownAddr(ip netip.Addr) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.known[ip.Unmap().WithZone("")]
	return ok && time.Since(at) <= knownFor
}

func (d *door) isMember(id peer.ID) bool { return d.member == nil || d.member(id) }

// enter counts one more connection at the door, or reports false when
// Conns are there already.
func (d *door) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.in >= d.cfg.Conns {
		return false
	}
	d.in++
	return true
}

func (d *door) leave() {
	d.mu.Lock()
	d.in--
	d.mu.Unlock()
}

// held is how many connections are at the door.
func (d *door) held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.in
}

// admit returns the door's hold on qc, nil if its device is a member, or
// closes qc and reports false when the door is full.
func (d *door) admit(qc *quic.Conn) (*doorConn, bool) {
	cs := qc.ConnectionState().TLS
	id, err := stateID(&cs)
	if err == nil && d.isMember(id) {
		return nil, true
	}
	if !d.enter() {
		qc.CloseWithError(errCodeRefused, d.cfg.full())
		return nil, false
	}
	c := &doorConn{d: d, qc: qc, id: id, in: true}
	c.idle = time.AfterFunc(d.cfg.Idle, c.idleOut)
	return c, true
}

// doorConn is one connection at the door. Its methods on nil (a member's
// connection) allow everything.
type doorConn struct {
	d  *door
	qc *quic.Conn
	id peer.ID

	mu   sync.Mutex // guards in, open, uni and idle's state
	in   bool       // still at the door, counted in d.in
	open int        // request streams being served
	uni  int        // unidirectional streams opened
	idle *time.Timer
}

// request admits one more request stream, its deadline set, and returns
// what to call when it is done; or it closes the connection and reports
// false.
func (c *doorConn) request(str *quic.Stream) (done func(), ok bool) {
	if c == nil || !c.stillIn() {
		return func() {}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open >= c.d.cfg.Streams {
		c.qc.CloseWithError(errCodeRefused, c.d.cfg.tooManyStreams())
		return nil, false
	}
	c.open++
	c.idle.Stop()
	str.SetDeadline(time.Now().Add(c.d.cfg.Request))
	return c.done, true
}

// done is the end of a request that request counted.
func (c *doorConn) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open--; c.open == 0 && c.in {
		c.idle.Reset(c.d.cfg.Idle)
	}
}

// uniStream admits one more unidirectional stream, or closes the
// connection and reports false.
func (c *doorConn) uniStream() bool {
	if c == nil || !c.stillIn() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uni >= c.d.cfg.UniStreams {
		c.qc.CloseWithError(errCodeRefused, c.d.cfg.tooManyUniStreams())
		return false
	}
	c.uni++
	return true
}

// stillIn reports whether the connection is still at the door: it leaves
// once its device is a member.
func (c *doorConn) stillIn() bool {
	if c.d.isMember(c.id) {
		c.leave()
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.in
}

// idleOut closes the connection when its idle time has run out, unless a
// request has started since or its device has become a member.
func (c *doorConn) idleOut() {
	if !c.stillIn() {
		return
	}
	c.mu.Lock()
	busy := c.open > 0
	c.mu.Unlock()
	if !busy {
		c.qc.CloseWithError(errCodeRefused, c.d.cfg.idle())
	}
}

// leave takes the connection out of the door, once.
func (c *doorConn) leave() {
	if c == nil {
		return
	}
	c.mu.Lock()
	in := c.in
	c.in = false
	c.idle.Stop()
	c.mu.Unlock()
	if in {
		c.d.leave()
	}
}

// AtDoor is how many connections of devices that are not members the
// endpoint holds now.
func (e *Endpoint) AtDoor() int { return e.door.held() }
