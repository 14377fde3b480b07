package transport

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// pipeListener hands out the server ends of net.Pipes, each from the
// address its client named: a TCP listener in a synctest bubble.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// dial connects from src ("ip:port") and returns the client's end.
func (l *pipeListener) dial(src string) net.Conn {
	server, client := net.Pipe()
	l.conns <- fromAddr{server, src}
	return client
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr("listener") }

type pipeAddr string

func (a pipeAddr) Network() string { return "tcp" }
func (a pipeAddr) String() string  { return string(a) }

// fromAddr is a conn whose remote address is src.
type fromAddr struct {
	net.Conn
	src string
}

func (c fromAddr) RemoteAddr() net.Addr { return pipeAddr(c.src) }

// closedAt records when the server closed each client end: it reads each
// until EOF.
type closedAt struct {
	mu sync.Mutex
	at map[net.Conn]time.Duration
}

func (c *closedAt) watch(conn net.Conn, start time.Time) {
	go func() {
		io.Copy(io.Discard, conn)
		c.mu.Lock()
		c.at[conn] = time.Since(start)
		c.mu.Unlock()
	}()
}

func (c *closedAt) of(conn net.Conn) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.at[conn]
	return d, ok
}

func testServerTLS(t *testing.T) *tls.Config {
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.Cert},
		ClientAuth: tls.RequireAnyClientCert}
}

// TestPreTLSBounds: connections that send no ClientHello are held PerSource
// from one address and Conns in all; one more is closed at once, before
// any TLS; those held are closed Hello after they came. The bounds then
// let new ones in.
func TestPreTLSBounds(t *testing.T) {
	conf := testServerTLS(t)
	synctest.Test(t, func(t *testing.T) {
		gate := newPreTLS(PreTLSConfig{Conns: 4, PerSource: 2, Hello: 2 * time.Second, Handshake: 2 * time.Second})
		pl := newPipeListener()
		l := newHandshakeListener(pl, conf, gate, func(c net.Conn) net.Conn { return c }, slog.New(slog.DiscardHandler))
		defer l.Close()
		start := time.Now()
		closed := &closedAt{at: map[net.Conn]time.Duration{}}
		dial := func(src string) net.Conn {
			c := pl.dial(src)
			closed.watch(c, start)
			return c
		}
		a1, a2, a3 := dial("10.0.0.1:1"), dial("10.0.0.1:2"), dial("10.0.0.1:3")
		b1, b2 := dial("10.0.0.2:1"), dial("[2001:db8::1]:1")
		c1 := dial("10.0.0.3:1")
		synctest.Wait()
		for _, tt := range []struct {
			name string
			c    net.Conn
			held bool
		}{
			{"first from a", a1, true}, {"second from a", a2, true}, {"third from a, over PerSource", a3, false},
			{"from b", b1, true}, {"from an IPv6 address", b2, true}, {"fifth in all, over Conns", c1, false},
		} {
			at, ok := closed.of(tt.c)
			if tt.held == ok || (ok && at != 0) {
				t.Errorf("%s: closed %v (after %v); want closed at once: %v", tt.name, ok, at, !tt.held)
			}
		}
		if n := gate.held(); n != 4 {
			t.Errorf("%d connections before TLS; want 4", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		for _, c := range []net.Conn{a1, a2, b1, b2} {
			if at, ok := closed.of(c); !ok || at != 2*time.Second {
				t.Errorf("a connection with no ClientHello: closed %v after %v; want closed after Hello (2 s)", ok, at)
			}
		}
		if n := gate.held(); n != 0 {
			t.Errorf("%d connections before TLS after Hello; want 0", n)
		}
		a4 := dial("10.0.0.1:4")
		synctest.Wait()
		if _, ok := closed.of(a4); ok {
			t.Errorf("a connection from a after its first ones were closed: closed at once; want held")
		}
	})
}

// TestPreTLSHandshake: a connection that sends its ClientHello within
// Hello has Handshake from then on to finish (it is closed then if it has
// not); one that finishes is handed to Accept and leaves the bounds.
func TestPreTLSHandshake(t *testing.T) {
	conf := testServerTLS(t)
	client, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clientConf := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{client.Cert},
		InsecureSkipVerify: true, ServerName: "labpool"}
	hello := clientHello(t, clientConf)
	synctest.Test(t, func(t *testing.T) {
		gate := newPreTLS(PreTLSConfig{Conns: 4, PerSource: 4, Hello: 2 * time.Second, Handshake: 2 * time.Second})
		pl := newPipeListener()
		l := newHandshakeListener(pl, conf, gate, func(c net.Conn) net.Conn { return c }, slog.New(slog.DiscardHandler))
		defer l.Close()
		start := time.Now()

		stalled := pl.dial("10.0.0.1:1")
		time.Sleep(1500 * time.Millisecond)
		go stalled.Write(hello) // and nothing after it
		var end time.Duration
		done := make(chan struct{})
		go func() {
			io.Copy(io.Discard, stalled)
			end = time.Since(start)
			close(done)
		}()
		<-done
		if want := 1500*time.Millisecond + 2*time.Second; end != want {
			t.Errorf("a connection that stalled after its ClientHello at 1.5 s closed after %v; want %v", end, want)
		}

		good := tls.Client(pl.dial("10.0.0.1:2"), clientConf)
		errc := make(chan error, 1)
		go func() { errc <- good.Handshake() }()
		c, err := l.Accept()
		if err != nil {
			t.Fatalf("accept a connection that finished its handshake: %v", err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("client handshake: %v", err)
		}
		if _, ok := c.(*tls.Conn); !ok {
			t.Errorf("accepted a %T; want a *tls.Conn", c)
		}
		if n := gate.held(); n != 0 {
			t.Errorf("%d connections before TLS after the handshake; want 0", n)
		}
		c.Close()
		good.Close()
	})
}

// clientHello returns the first flight of a TLS client with conf.
func clientHello(t *testing.T, conf *tls.Config) []byte {
	w := &firstWrite{}
	tls.Client(w, conf).Handshake()
	if len(w.b) == 0 {
		t.Fatal("no ClientHello written")
	}
	return w.b
}

// firstWrite keeps the first write and fails everything else.
type firstWrite struct {
	net.Conn
	b []byte
}

func (w *firstWrite) Write(b []byte) (int, error) {
	if w.b != nil {
		return 0, errors.New("closed")
	}
	w.b = append([]byte(nil), b...)
	return len(b), nil
}

func (w *firstWrite) Read([]byte) (int, error)         { return 0, io.EOF }
func (w *firstWrite) Close() error                     { return nil }
func (w *firstWrite) SetDeadline(time.Time) error      { return nil }
func (w *firstWrite) SetReadDeadline(time.Time) error  { return nil }
func (w *firstWrite) SetWriteDeadline(time.Time) error { return nil }
