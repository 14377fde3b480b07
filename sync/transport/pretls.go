package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Until its TLS handshake is done, a TCP connection of the data path is
// anyone's: the kernel accepted it, and what it costs us (a descriptor, a
// goroutine, the TLS state) is spent before we know who is there, or
// whether anyone will ever send a ClientHello. So the data path does the
// handshakes itself, before http.Server sees a connection, and bounds the
// connections still in one (PreTLSConfig): PerSource from one address and
// Conns in all. A connection over either is closed as soon as it is
// accepted, before any TLS state is made; each in a handshake has Hello
// to send its ClientHello and then Handshake to finish. The refusals are
// logged, once a minute per rule, naming it: a TCP connection before TLS
// has no way to carry a reason.

// PreTLSConfig bounds the data path's TCP connections whose TLS handshake
// is not done. A field left zero takes DefaultPreTLS's value.
type PreTLSConfig struct {
	// Conns is how many may be in a handshake at once, all sources
	// together (256).
	Conns int
	// PerSource is how many of them may come from one address (32, the
	// burst of Config.Handshakes).
	PerSource int
	// Hello is how long after it was accepted a connection has to send
	// its ClientHello (2 s).
	Hello time.Duration
	// Handshake is how long after its ClientHello it has to finish the
	// handshake (2 s).
	Handshake time.Duration
}

// DefaultPreTLS returns the bounds labpool uses.
func DefaultPreTLS() PreTLSConfig {
	return PreTLSConfig{Conns: 256, PerSource: 32, Hello: 2 * time.Second, Handshake: 2 * time.Second}
}

func (c PreTLSConfig) orDefault() PreTLSConfig {
	d := DefaultPreTLS()
	if c.Conns <= 0 {
		c.Conns = d.Conns
	}
	if c.PerSource <= 0 {
		c.PerSource = d.PerSource
	}
	if c.Hello <= 0 {
		c.Hello = d.Hello
	}
	if c.Handshake <= 0 {
		c.Handshake = d.Handshake
	}
	return c
}

// The rules of the data path's refusals before TLS.
func (c PreTLSConfig) fullSource() string {
	return fmt.Sprintf("refused: %d tcp connections from this address are in a tls handshake already (rule: data handshakes per source)", c.PerSource)
}

func (c PreTLSConfig) full() string {
	return fmt.Sprintf("refused: %d tcp connections are in a tls handshake already (rule: data handshakes)", c.Conns)
}

// preTLS counts the connections in a handshake.
type preTLS struct {
	cfg PreTLSConfig

	mu    sync.Mutex // guards all, bySrc
	all   int
	bySrc map[netip.Addr]int
}

func newPreTLS(cfg PreTLSConfig) *preTLS {
	return &preTLS{cfg: cfg.orDefault(), bySrc: map[netip.Addr]int{}}
}

// enter counts one more connection from ip, or returns the refusal of the
// bound it is over.
func (p *preTLS) enter(ip netip.Addr) (refusal string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.bySrc[ip] >= p.cfg.PerSource:
		return p.cfg.fullSource()
	case p.all >= p.cfg.Conns:
		return p.cfg.full()
	}
	p.all++
	p.bySrc[ip]++
	return ""
}

func (p *preTLS) leave(ip netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all--
	if p.bySrc[ip]--; p.bySrc[ip] <= 0 {
		delete(p.bySrc, ip)
	}
}

// held is how many connections are in a handshake.
func (p *preTLS) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all
}

// handshakeListener accepts TCP connections, does their TLS handshakes
// within preTLS's bounds and hands out the *tls.Conn of each that
// finished; Accept's conns are ready to serve.
type handshakeListener struct {
	ln     net.Listener
	conf   *tls.Config
	gate   *preTLS
	wrap   func(net.Conn) net.Conn // before TLS (the data path files it for Disconnect)
	log    *slog.Logger
	ready  chan net.Conn
	ctx    context.Context // cancelled by Close: aborts the handshakes
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards err, logged
	err    error      // why accepting stopped
	logged map[string]time.Time
}

func newHandshakeListener(ln net.Listener, conf *tls.Config, gate *preTLS, wrap func(net.Conn) net.Conn, log *slog.Logger) *handshakeListener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &handshakeListener{ln: ln, conf: conf, gate: gate, wrap: wrap, log: log,
		ready: make(chan net.Conn), ctx: ctx, cancel: cancel, logged: map[string]time.Time{}}
	l.wg.Go(l.acceptLoop)
	return l
}

// acceptLoop accepts until the listener fails, starting a handshake for
// each connection within the bounds and closing the others at once.
func (l *handshakeListener) acceptLoop() {
	defer l.cancel()
	var backoff time.Duration
	for {
		raw, err := l.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of descriptors, say: wait as http.Server does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
					continue
				case <-l.ctx.Done():
					err = net.ErrClosed
				}
			}
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
			return
		}
		backoff = 0
		ip := netAddrIP(raw.RemoteAddr())
		if refusal := l.gate.enter(ip); refusal != "" {
			raw.Close()
			l.refused(ip, refusal)
			continue
		}
		l.wg.Go(func() { l.handshake(raw, ip) })
	}
}

// isTemporary is what http.Server retries after: EMFILE, ECONNABORTED.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// handshake does raw's TLS handshake within the deadlines and hands the
// connection to Accept; it leaves the gate once the handshake is over,
// whatever its end.
func (l *handshakeListener) handshake(raw net.Conn, ip netip.Addr) {
	cfg := l.gate.cfg
	raw.SetDeadline(time.Now().Add(cfg.Hello))
	conf := l.conf.Clone()
	inner := l.conf.GetConfigForClient
	conf.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		raw.SetDeadline(time.Now().Add(cfg.Handshake))
		if inner == nil {
			return nil, nil
		}
		return inner(hello)
	}
	c := tls.Server(l.wrap(raw), conf)
	err := c.HandshakeContext(l.ctx)
	l.gate.leave(ip)
	if err != nil {
		l.log.Debug("data path: tls handshake", "source", ip.String(), "err", err)
		c.Close()
		return
	}
	raw.SetDeadline(time.Time{})
	select {
	case l.ready <- c:
	case <-l.ctx.Done():
		c.Close()
	}
}

// refused logs a refusal before TLS, once a minute per rule.
func (l *handshakeListener) refused(ip netip.Addr, refusal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.logged[refusal]) < logEvery {
		return
	}
	l.logged[refusal] = now
	l.log.Warn("data path: tcp connection closed before tls", "source", ip.String(), "reason", refusal)
}

// Accept returns the next connection whose handshake is done.
func (l *handshakeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil && !errors.Is(l.err, net.ErrClosed) {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close stops accepting, aborts the handshakes under way and returns once
// they have ended. It is idempotent.
func (l *handshakeListener) Close() error {
	l.cancel()
	err := l.ln.Close()
	l.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (l *handshakeListener) Addr() net.Addr { return l.ln.Addr() }
