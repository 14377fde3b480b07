package transport

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/labpool/labpool/internal/procs"
	"github.com/labpool/labpool/sync/peer"
)

// Disconnect closes every connection with device id at once: QUIC
// connections it made to us and we made to it, and both directions of the
// TCP data path. Every stream on them (replication, logs, tunnels, copies)
// fails on both sides within a round trip. The device may connect again:
// Authorize refuses its requests once it is no longer a member.
func (e *Endpoint) Disconnect(id peer.ID) {
	e.conns.closeAll(id)
	e.Drop(id) // the pinned transports forget the closed connections
}

// ProvenAddr returns the address (as given to Client or SetAddrs) of the
// last handshake with id that proved it, made by Client or DataClient.
func (e *Endpoint) ProvenAddr(id peer.ID) (string, bool) {
	e.mu.Lock()
	p := e.peers[id]
	e.mu.Unlock()
	if p == nil {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.via, p.via != ""
}

// SessionIPs returns the remote IPs of the live connections whose
// handshake proved device id (QUIC, made by either side, and the TCP data
// path), each once; none when there is no such connection. A connection's
// remote IP is where the device's key answered, not a claim: the
// handshake takes round trips to that address (a QUIC path that migrates
// is validated there first).
func (e *Endpoint) SessionIPs(id peer.ID) []netip.Addr {
	return e.conns.ips(id)
}

// conn is a connection filed in a connSet: a *quic.Conn or *trackedConn.
type conn interface{ RemoteAddr() net.Addr }

// connSet files open connections under the device they proved.
type connSet struct {
	mu   sync.Mutex // guards byID
	byID map[peer.ID]map[conn]func()
}

// add files c under id; close closes it.
func (s *connSet) add(id peer.ID, c conn, close func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[peer.ID]map[conn]func(){}
	}
	m := s.byID[id]
	if m == nil {
		m = map[conn]func(){}
		s.byID[id] = m
	}
	m[c] = close
}

// ips returns the remote IPs of the connections filed under id, each once.
func (s *connSet) ips(id peer.ID) []netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []netip.Addr
	for c := range s.byID[id] {
		if ip := netAddrIP(c.RemoteAddr()); ip.IsValid() && !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

func (s *connSet) remove(id peer.ID, c conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.byID[id]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(s.byID, id)
		}
	}
}

// closeAll closes and forgets every connection filed under id.
func (s *connSet) closeAll(id peer.ID) {
	s.mu.Lock()
	m := s.byID[id]
	delete(s.byID, id)
	s.mu.Unlock()
	for _, close := range m {
		close()
	}
}

// count is how many connections are filed under id.
func (s *connSet) count(id peer.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID[id])
}

// trackQUIC files a QUIC connection whose handshake is done until it ends.
func (e *Endpoint) trackQUIC(qc *quic.Conn) {
	cs := qc.ConnectionState().TLS
	id, err := stateID(&cs)
	if err != nil {
		return
	}
	if e.door.member != nil && e.door.member(id) {
		e.door.remember(netAddrIP(qc.RemoteAddr()), time.Now())
	}
	e.conns.add(id, qc, func() { qc.CloseWithError(0, "disconnected") })
	context.AfterFunc(qc.Context(), func() { e.conns.remove(id, qc) })
}

// trackedConn is a TCP connection of the data path, filed under its
// device once a handshake proved it, until it is closed.
type trackedConn struct {
	net.Conn
	e *Endpoint

	mu     sync.Mutex // guards id, filed and closed
	id     peer.ID
	filed  bool
	closed bool
}

// track files c under id.
func (c *trackedConn) track(id peer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.filed || c.closed {
		return
	}
	c.id, c.filed = id, true
	c.e.conns.add(id, c, func() { c.Conn.Close() })
}

func (c *trackedConn) Close() error {
	c.mu.Lock()
	if c.filed {
		c.e.conns.remove(c.id, c)
	}
	c.closed, c.filed = true, false
	c.mu.Unlock()
	return c.Conn.Close()
}

// Read and Write step aside while urgent work (telemetry, a control
// request) is under way in this process: see procs.Yield.
func (c *trackedConn) Read(b []byte) (int, error) {
	procs.Yield(context.Background())
	return c.Conn.Read(b)
}

func (c *trackedConn) Write(b []byte) (int, error) {
	procs.Yield(context.Background())
	return c.Conn.Write(b)
}

// trackTCP wraps a connection of the data path in a trackedConn.
func (e *Endpoint) trackTCP(c net.Conn) net.Conn { return &trackedConn{Conn: c, e: e} }
