// Package transport carries labpool's HTTP/3 over QUIC between devices,
// with mutual TLS and no certificate authority: a peer is who its
// certificate's Ed25519 key says it is (peer.ID), nothing more.
//
// An Endpoint owns one UDP socket (one quic.Transport) that serves incoming
// connections and dials outgoing ones. Outgoing requests go through a
// pinned client per peer: the handshake fails unless the server proves the
// expected peer.ID, and all requests to that peer share one QUIC connection.
// DialAny is the one unpinned dial, for joining a pool; KeyingMaterial binds
// a join proof to the TLS session on both sides.
//
// Strangers can reach the socket: each source address has a budget of
// handshakes (Config.Handshakes, see admit.go; with Config.Member, those
// from addresses where no member has connected also share Config.
// Strangers) and of refused requests
// (Refusals, for AuthorizeLimited and RateLimited). A device that is not a
// member (Config.Member) gets only what the join exchange needs: its paths
// (DoorConfig.Paths), few streams and requests, short requests, a close
// soon after it connected, and few such connections at once, per address,
// per network and in all (Config.Door, see door.go); the TCP data path
// serves members only, and bounds its connections before TLS (Config.
// PreTLS, see pretls.go). Disconnect closes every
// connection with a device at once, as when it is removed from the pool.
//
// Keepalives (Config.KeepAlive) hold long streams open while quiet. A peer
// that stops answering is declared dead KeepAlive + IdleTimeout after its
// last packet (3 s by default: QUIC restarts the idle timer when it sends
// the first keepalive after silence), and every request and response body
// on its connection then fails.
//
// Serve blocks until ctx is cancelled and returns only after its handlers
// have returned.
package transport

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/labpool/labpool/sync/peer"
)

// DefaultPort is the UDP port labpool listens on unless told otherwise.
const DefaultPort = 7420

// Config tunes an Endpoint.
type Config struct {
	// Listen is the UDP address to bind, e.g. ":7420"; port 0 picks one.
	Listen string
	// KeepAlive is how often an idle connection is pinged (0.4 s).
	KeepAlive time.Duration
	// IdleTimeout is how long a silent peer lives after our first
	// unanswered keepalive before its connection is closed and its streams
	// fail (2 s). A dead peer is noticed after at most KeepAlive +
	// IdleTimeout.
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the silence while a handshake is under way (5 s).
	HandshakeTimeout time.Duration
	// StreamReceiveWindow is the largest flow-control window of one stream, bytes.
	StreamReceiveWindow uint64
	// ConnReceiveWindow is the largest flow-control window of one connection, bytes.
	ConnReceiveWindow uint64
	// MaxStreams is how many concurrent streams a peer may open to us.
	MaxStreams int64
	// QUICOnly serves no TCP data path: peers' copies from here fall back
	// to QUIC (as where a firewall lets only UDP through).
	QUICOnly bool
	// Handshakes is each source address's budget of incoming handshakes,
	// QUIC and TCP together (32 at once, then 1 a second): see admit.go.
	Handshakes LimiterConfig
	// Strangers is the budget of incoming handshakes, all sources together,
	// from addresses where no member has connected lately (64 at once, then
	// 4 a second), checked beside each source's own; it applies only with
	// Member set: see admit.go.
	Strangers LimiterConfig
	// Refusals is each source address's budget of refused requests (10 at
	// once, then 10 a minute), the Limiter that Refusals returns.
	Refusals LimiterConfig
	// Member reports whether a device is a member of the pool; the QUIC
	// connections of the others pass through the door. Nil: every device is.
	Member func(peer.ID) bool
	// Door bounds what a device that is not a member may hold (door.go).
	Door DoorConfig
	// PreTLS bounds the data path's TCP connections before their TLS
	// handshake is done (pretls.go).
	PreTLS PreTLSConfig
}

// DefaultConfig returns the settings labpool uses on a LAN.
func DefaultConfig() Config {
	return Config{
		Listen:              fmt.Sprintf(":%d", DefaultPort),
		KeepAlive:           400 * time.Millisecond,
		IdleTimeout:         2 * time.Second,
		HandshakeTimeout:    5 * time.Second,
		StreamReceiveWindow: 16 << 20,
		ConnReceiveWindow:   32 << 20,
		MaxStreams:          1000,
		Handshakes:          LimiterConfig{What: "handshakes", Burst: 32, Rate: 1},
		Strangers:           LimiterConfig{What: "handshakes from addresses with no member, all together", Burst: 64, Rate: 4},
		Refusals:            LimiterConfig{What: "refused requests", Burst: 10, Rate: 10.0 / 60},
		Door:                DefaultDoor(),
		PreTLS:              DefaultPreTLS(),
	}
}

func (c Config) quic() *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout:       c.HandshakeTimeout,
		MaxIdleTimeout:             c.IdleTimeout,
		KeepAlivePeriod:            c.KeepAlive,
		MaxStreamReceiveWindow:     c.StreamReceiveWindow,
		MaxConnectionReceiveWindow: c.ConnReceiveWindow,
		MaxIncomingStreams:         c.MaxStreams,
		Allow0RTT:                  false,
	}
}

// Endpoint is this device's QUIC endpoint: one UDP socket, both listening and dialing.
type Endpoint struct {
	id    *peer.Identity
	log   *slog.Logger
	udp   *net.UDPConn
	tcp   net.Listener // the data path (see DataClient); nil without one
	tr    *quic.Transport
	qconf *quic.Config

	handshakes *Limiter // incoming handshakes per source, address not proven
	proven     *Limiter // the same from proven addresses (QUIC Retry, TCP)
	strangers  *Limiter // handshakes from addresses with no member, one budget; nil without Config.Member
	refusals   *Limiter // refused requests per source (Refusals)
	conns      connSet  // open connections by device, for Disconnect
	door       *door    // what devices that are not members may hold
	preTLS     *preTLS  // the data path's connections before TLS

	mu      sync.Mutex // guards peers, serving and closed
	peers   map[peer.ID]*pinned
	serving bool
	closed  bool
}

// New binds cfg.Listen and returns an endpoint speaking as id.
func New(id *peer.Identity, cfg Config, log *slog.Logger) (*Endpoint, error) {
	if log == nil {
		log = slog.Default()
	}
	key, ok := id.Cert.PrivateKey.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("start endpoint: identity key is not ed25519")
	}
	addr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("resolve listen address %q: %w", cfg.Listen, err)
	}
	udp, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	reset, err := resetKey(key)
	if err != nil {
		udp.Close()
		return nil, err
	}
	e := &Endpoint{
		id:    id,
		log:   log,
		udp:   udp,
		tr:    &quic.Transport{Conn: udp, StatelessResetKey: reset},
		qconf: cfg.quic(),
		peers: make(map[peer.ID]*pinned),

		handshakes: NewLimiter(cfg.Handshakes, log),
		proven:     NewLimiter(proven(cfg.Handshakes), log),
		refusals:   NewLimiter(cfg.Refusals, log),
		door:       newDoor(cfg.Door, cfg.Member),
		preTLS:     newPreTLS(cfg.PreTLS),
	}
	if cfg.Member != nil {
		e.strangers = NewLimiter(cfg.Strangers, log)
	}
	e.guardQUIC(e.tr)
	if !cfg.QUICOnly {
		e.tcp = e.listenData()
	}
	return e, nil
}

// resetKey derives the stateless reset key from the identity, so that after
// a restart this device resets connections its previous run held, and their
// peers notice at once instead of after the idle timeout.
func resetKey(key ed25519.PrivateKey) (*quic.StatelessResetKey, error) {
	b, err := hkdf.Key(sha256.New, key.Seed(), nil, "labpool quic stateless reset", 32)
	if err != nil {
		return nil, fmt.Errorf("derive stateless reset key: %w", err)
	}
	k := quic.StatelessResetKey(b)
	return &k, nil
}

// clientQUIC is the QUIC config of dialed connections: HTTP/3 servers
// open no bidirectional streams.
func (e *Endpoint) clientQUIC() *quic.Config {
	c := e.qconf.Clone()
	c.MaxIncomingStreams = -1
	return c
}

func proven(c LimiterConfig) LimiterConfig {
	c.What += " from a proven address"
	return c
}

// Refusals returns the limiter of refused requests per source address, for
// AuthorizeLimited and RateLimited.
func (e *Endpoint) Refusals() *Limiter { return e.refusals }

// ID returns this endpoint's device ID.
func (e *Endpoint) ID() peer.ID { return e.id.ID }

// Addr returns the bound UDP address.
func (e *Endpoint) Addr() *net.UDPAddr {
	return e.udp.LocalAddr().(*net.UDPAddr)
}

// Close closes every connection and the socket. It is idempotent.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	peers := e.peers
	e.peers = nil
	e.mu.Unlock()
	for _, p := range peers {
		p.close()
	}
	if e.tcp != nil {
		e.tcp.Close()
	}
	err := e.tr.Close()
	if uerr := e.udp.Close(); err == nil {
		err = uerr
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close endpoint: %w", err)
	}
	return nil
}
