package transport

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/sync/peer"
)

// A device that is not a member of the pool (Config.Member says so: a
// stranger, a removed device, or one whose membership has not reached us
// yet) needs from us only the join exchange: one request on a connection of
// its own. Its QUIC connections pass through the door, which holds each to
// DoorConfig whatever the device sends, so that no flood of them makes this
// device hold much memory, and no one keeps the door shut to others:
//   - Streams request streams open at once (a third closes the connection)
//     and UniStreams unidirectional ones in all (HTTP/3's control and
//     QPACK streams; one more closes it);
//   - Requests requests in all (the join exchange takes one; one more
//     closes the connection);
//   - each request done, from its stream's opening to the last byte of the
//     answer, within Request (the stream is reset after that);
//   - a request only for one of Paths (the join exchange); any other is
//     answered 403 by the door itself;
//   - closed Idle after it connected, or when the request then open ends:
//     neither keepalives nor requests extend it;
//   - request headers of HeaderBytes at most, and a request body of
//     BodyBytes at most, which the door reads whole before the handler
//     sees the request;
//   - PerSource such connections at once from one address, PerNetwork from
//     one network (an IPv4 /24, an IPv6 /64) and Conns for the whole
//     endpoint (door_slots.go). A connection over one of them is closed as
//     soon as its handshake has told us who it is, unless an attempt within
//     the same bound has finished (see doorConn.finished): then the oldest
//     such attempt is closed to make room, and the newcomer is let in.
//
// QUIC announces a connection's stream limit in the handshake, before the
// client's certificate has been seen, so members and the rest are offered
// Config.MaxStreams alike and the door enforces its own, smaller limit.
// A connection is closed with an HTTP/3 error whose reason names the rule
// ("refused: ... (rule: door streams)"). A device that becomes a member on
// a connection (it joined, or its membership reached us) leaves the door at
// its next stream and is served as members are from then on, but for its
// header limit, set when the connection opened.
//
// The TCP data path serves members only: a device that is not a member
// fails its TLS handshake there (rule: door data path, see admit.go).

// DoorConfig bounds what a device that is not a member may hold. A field
// left zero takes DefaultDoor's value.
type DoorConfig struct {
	// Streams is how many request streams one of its connections may have
	// open at once (2).
	Streams int
	// UniStreams is how many unidirectional streams one of its connections
	// may open in all (3).
	UniStreams int
	// Requests is how many requests one of its connections may make in
	// all (4).
	Requests int
	// Request bounds each of its requests, headers to the answer (5 s).
	Request time.Duration
	// Idle closes its connection this long after it connected, or when
	// the request open then ends (10 s). Requests do not extend it.
	Idle time.Duration
	// Quiet is how long after it connected an attempt that has opened no
	// request counts as finished, and may be closed to make room (2 s).
	Quiet time.Duration
	// Proof is how long after its first request opened an attempt that has
	// not delivered one whole request (headers and body: the join proof)
	// counts as finished, and may be closed to make room (1 s). A joiner
	// sends its request at once; an open request that delivers nothing
	// holds no place against it.
	Proof time.Duration
	// BodyBytes is the largest request body it may send (32 KiB).
	BodyBytes int
	// HeaderBytes is the largest request header it may send (16 KiB).
	HeaderBytes int
	// Conns is how many of its connections, all devices that are not
	// members together, the endpoint holds at once (32).
	Conns int
	// PerSource is how many of them may come from one address (4).
	PerSource int
	// PerNetwork is how many of them may come from one IPv4 /24 or one
	// IPv6 /64 (16).
	PerNetwork int
	// Paths are the only paths its requests may reach (the join
	// exchange's); the others are answered 403 by the door. None: every
	// path reaches the handler (which must then refuse them itself).
	Paths []string
}

// DefaultDoor returns the door labpool uses (without Paths, which the
// caller names).
func DefaultDoor() DoorConfig {
	return DoorConfig{Streams: 2, UniStreams: 3, Requests: 4, Request: 5 * time.Second,
		Idle: 10 * time.Second, Quiet: 2 * time.Second, Proof: time.Second,
		HeaderBytes: 16 << 10, BodyBytes: 32 << 10,
		Conns: 32, PerSource: 4, PerNetwork: 16}
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
	pickD := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	c.Streams, c.UniStreams = pick(c.Streams, d.Streams), pick(c.UniStreams, d.UniStreams)
	c.Requests, c.HeaderBytes = pick(c.Requests, d.Requests), pick(c.HeaderBytes, d.HeaderBytes)
	c.Conns, c.PerSource = pick(c.Conns, d.Conns), pick(c.PerSource, d.PerSource)
	c.PerNetwork, c.BodyBytes = pick(c.PerNetwork, d.PerNetwork), pick(c.BodyBytes, d.BodyBytes)
	c.Request, c.Idle, c.Quiet = pickD(c.Request, d.Request), pickD(c.Idle, d.Idle), pickD(c.Quiet, d.Quiet)
	c.Proof = pickD(c.Proof, d.Proof)
	c.Paths = slices.Clone(c.Paths)
	return c
}

// The reasons a connection at the door is closed with.
func (c DoorConfig) tooManyStreams() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool may have %d requests open at once (rule: door streams)", c.Streams)
}

func (c DoorConfig) tooManyUniStreams() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool may open %d unidirectional streams (rule: door streams)", c.UniStreams)
}

func (c DoorConfig) tooManyRequests() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool may make %d requests on a connection (rule: door requests)", c.Requests)
}

func (c DoorConfig) idle() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool is closed %v after it connected, once no request is open (rule: door idle)", c.Idle)
}

func (c DoorConfig) full() string {
	return fmt.Sprintf("refused: %d devices that are not members of the pool are connected already, try again later (rule: door connections)", c.Conns)
}

func (c DoorConfig) fullSource() string {
	return fmt.Sprintf("refused: %d connections of devices that are not members of the pool are open from this address already, try again later (rule: door per source)", c.PerSource)
}

func (c DoorConfig) fullNetwork() string {
	return fmt.Sprintf("refused: %d connections of devices that are not members of the pool are open from this network already, try again later (rule: door per network)", c.PerNetwork)
}

func (c DoorConfig) evicted() string {
	return "refused: the door is full and this connection's attempt has ended: it makes room for a newcomer (rule: door connections)"
}

func (c DoorConfig) bodyTooLarge() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool may send a request body of %d bytes at most (rule: door body)", c.BodyBytes)
}

func (c DoorConfig) wrongPath() string {
	return fmt.Sprintf("refused: a device that is not a member of the pool may reach only %s (rule: door paths)", strings.Join(c.Paths, ", "))
}

// errCodeRefused closes a connection at the door: HTTP/3's
// H3_EXCESSIVE_LOAD.
const errCodeRefused = quic.ApplicationErrorCode(http3.ErrCodeExcessiveLoad)

// door holds the connections at the door for the whole endpoint.
type door struct {
	cfg    DoorConfig
	member func(peer.ID) bool // nil: every device is a member
	now    func() time.Time

	mu    sync.Mutex               // guards known, slots and the counters of every doorConn
	known map[netip.Addr]time.Time // addresses of members' connections, when last seen
	slots []*doorConn              // at the door, oldest first
}

func newDoor(cfg DoorConfig, member func(peer.ID) bool) *door {
	return &door{cfg: cfg.orDefault(), member: member, now: time.Now}
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
	return ok && d.now().Sub(at) <= knownFor
}

func (d *door) isMember(id peer.ID) bool { return d.member == nil || d.member(id) }

// held is how many connections are at the door.
func (d *door) held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.slots)
}

// admit returns the door's hold on qc, nil if its device is a member, or
// closes qc and reports false when the door has no room for it.
func (d *door) admit(qc *quic.Conn) (*doorConn, bool) {
	cs := qc.ConnectionState().TLS
	id, err := stateID(&cs)
	if err == nil && d.isMember(id) {
		return nil, true
	}
	c := d.newConn(netAddrIP(qc.RemoteAddr()), func(reason string) { qc.CloseWithError(errCodeRefused, reason) })
	c.id = id
	evicted, refusal := d.enter(c)
	for _, v := range evicted {
		v.close(d.cfg.evicted())
	}
	if refusal != "" {
		c.close(refusal)
		return nil, false
	}
	return c, true
}

// newConn is a connection from src not yet at the door; close closes it
// with a reason.
func (d *door) newConn(src netip.Addr, close func(reason string)) *doorConn {
	src = src.Unmap().WithZone("")
	return &doorConn{d: d, src: src, network: networkOf(src), close: close}
}

// doorConn is one connection at the door. Its methods on nil (a member's
// connection) allow everything.
type doorConn struct {
	d       *door
	id      peer.ID
	src     netip.Addr
	network netip.Prefix
	close   func(reason string) // closes the connection, naming the rule

	// Guarded by d.mu:
	in       bool      // still at the door, in d.slots
	since    time.Time // when it entered the door
	open     int       // request streams being served
	asked    int       // requests opened in all
	askedAt  time.Time // when its first request opened
	proved   bool      // a request of it has been delivered whole
	answered int       // requests done in all
	uni      int       // unidirectional streams opened
	expired  bool      // Idle has passed: closed when its open request ends
	idle     *time.Timer
}

// request admits one more request stream, its deadline set, and returns
// what to call when it is done; or it closes the connection and reports
// false.
func (c *doorConn) request(str *quic.Stream) (done func(), ok bool) {
	if c == nil || !c.stillIn() {
		return func() {}, true
	}
	if refusal := c.begin(); refusal != "" {
		c.close(refusal)
		return nil, false
	}
	str.SetDeadline(time.Now().Add(c.d.cfg.Request))
	return c.done, true
}

// begin counts one more request, or returns why it is refused.
func (c *doorConn) begin() (refusal string) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	switch {
	case c.open >= c.d.cfg.Streams:
		return c.d.cfg.tooManyStreams()
	case c.asked >= c.d.cfg.Requests:
		return c.d.cfg.tooManyRequests()
	}
	if c.asked == 0 {
		c.askedAt = c.d.now()
	}
	c.open++
	c.asked++
	return ""
}

// prove notes that a request of the connection has been delivered whole:
// from then on the attempt is the handler's to finish.
func (c *doorConn) prove() {
	if c == nil {
		return
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	c.proved = true
}

// done is the end of a request that request counted: the attempt has had
// its answer, and its connection is closed if Idle has passed meanwhile.
func (c *doorConn) done() {
	c.d.mu.Lock()
	c.open--
	c.answered++
	out := c.expired && c.open == 0 && c.in
	c.d.mu.Unlock()
	if out {
		c.close(c.d.cfg.idle())
	}
}

// uniStream admits one more unidirectional stream, or closes the
// connection and reports false.
func (c *doorConn) uniStream() bool {
	if c == nil || !c.stillIn() {
		return true
	}
	c.d.mu.Lock()
	over := c.uni >= c.d.cfg.UniStreams
	if !over {
		c.uni++
	}
	c.d.mu.Unlock()
	if over {
		c.close(c.d.cfg.tooManyUniStreams())
		return false
	}
	return true
}

// stillIn reports whether the connection is still at the door: it leaves
// once its device is a member.
func (c *doorConn) stillIn() bool {
	if c.d.isMember(c.id) {
		c.leave()
		return false
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return c.in
}

// idleOut closes the connection when Idle has passed since it entered,
// unless its device has become a member; with a request open, that
// request's end closes it.
func (c *doorConn) idleOut() {
	if !c.stillIn() {
		return
	}
	c.d.mu.Lock()
	busy := c.open > 0
	c.expired = true
	c.d.mu.Unlock()
	if !busy {
		c.close(c.d.cfg.idle())
	}
}

// leave takes the connection out of the door, once.
func (c *doorConn) leave() {
	if c == nil {
		return
	}
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	c.d.remove(c)
}

// AtDoor is how many connections of devices that are not members the
// endpoint holds now.
func (e *Endpoint) AtDoor() int { return e.door.held() }

// doorHandler serves h to a request at the door only for one of the
// door's paths, or when its device has become a member; any other request
// there is answered 403, naming the rule. A request served at the door is
// read whole first (BodyBytes at most, else 413 naming the rule), and dc
// learns it was delivered (doorConn.prove).
func (e *Endpoint) doorHandler(h http.Handler, dc *doorConn) http.Handler {
	cfg := e.door.cfg
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := PeerID(r)
		if ok && e.door.isMember(id) {
			h.ServeHTTP(w, r)
			return
		}
		if len(cfg.Paths) > 0 && !slices.Contains(cfg.Paths, r.URL.Path) {
			httperr.Write(w, http.StatusForbidden, "door_path", cfg.wrongPath())
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, int64(cfg.BodyBytes)+1))
		switch {
		case err != nil:
			httperr.Write(w, http.StatusBadRequest, "door_body", fmt.Sprintf("read the request body: %v", err))
			return
		case len(body) > cfg.BodyBytes:
			httperr.Write(w, http.StatusRequestEntityTooLarge, "door_body", cfg.bodyTooLarge())
			return
		}
		dc.prove()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}
