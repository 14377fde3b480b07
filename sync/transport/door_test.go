package transport_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// partialHeaders is the start of an HTTP/3 HEADERS frame that announces
// 4000 bytes and sends one: a request stuck in the header read.
var partialHeaders = []byte{0x01, 0x4f, 0xa0, 0x00}

// doorServer serves h from a new endpoint whose only member is the device
// of the returned endpoint (and identity), with door d (zero fields: the defaults).
func doorServer(t *testing.T, d transport.DoorConfig, h http.Handler) (srv, member *transport.Endpoint, memberID *peer.Identity) {
	t.Helper()
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	member = newEndpointAs(t, id, testConfig())
	cfg := testConfig()
	cfg.Door = d
	cfg.Member = func(d peer.ID) bool { return d == id.ID }
	srv = newEndpoint(t, cfg)
	serve(t, srv, h)
	return srv, member, id
}

// rawDial opens a raw QUIC connection to srv as a new device (or as id),
// pinging every keepAlive (0: never).
func rawDial(t *testing.T, srv *transport.Endpoint, id *peer.Identity, keepAlive time.Duration) *quic.Conn {
	t.Helper()
	if id == nil {
		var err error
		if id, err = peer.LoadOrCreate(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := quic.DialAddr(ctx, srv.Addr().String(), &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.Cert},
		InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}, ServerName: "labpool",
	}, &quic.Config{KeepAlivePeriod: keepAlive, MaxIdleTimeout: time.Minute})
	if err != nil {
		t.Fatalf("dial %s: %v", srv.Addr(), err)
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	return c
}

// stuckStream opens a stream on c that never finishes its headers.
func stuckStream(t *testing.T, c *quic.Conn) *quic.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	str, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	if _, err := str.Write(partialHeaders); err != nil {
		t.Fatalf("write on stream: %v", err)
	}
	return str
}

// waitClosed waits (at most 10 s) for the server to close c and checks
// that the reason names rule.
func waitClosed(t *testing.T, c *quic.Conn, rule string) {
	t.Helper()
	select {
	case <-c.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("connection still open after 10 s; want it closed (rule: %s)", rule)
	}
	var ae *quic.ApplicationError
	err := context.Cause(c.Context())
	if !errors.As(err, &ae) || !ae.Remote {
		t.Fatalf("connection ended with %v; want closed by the server", err)
	}
	if !strings.HasPrefix(ae.ErrorMessage, "refused: ") || !strings.HasSuffix(ae.ErrorMessage, "(rule: "+rule+")") {
		t.Errorf("closed with %q; want a refusal naming the rule %s", ae.ErrorMessage, rule)
	}
}

// gate is a handler that holds every request until opened, counting those
// it holds.
type gate struct {
	held atomic.Int64
	open chan struct{}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.held.Add(1)
	<-g.open
	fmt.Fprint(w, "ok")
}

// TestDoorStreams: a device that is not a member has its connection closed
// when it opens a third request stream or a fourth unidirectional one,
// naming the rule; a member holds 50 requests at once on one connection;
// a device that becomes a member on its connection leaves the door there.
func TestDoorStreams(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	srv, member, _ := doorServer(t, transport.DoorConfig{}, g)

	stranger := rawDial(t, srv, nil, 0)
	stuckStream(t, stranger)
	stuckStream(t, stranger)
	stuckStream(t, stranger)
	waitClosed(t, stranger, "door streams")

	uni := rawDial(t, srv, nil, 0)
	for range 4 {
		if s, err := uni.OpenUniStream(); err == nil {
			s.Write([]byte{0x21}) // a reserved stream type, ignored by HTTP/3
		}
	}
	waitClosed(t, uni, "door streams")

	client := member.Client(srv.ID(), []string{srv.Addr().String()})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			resp, err := client.Get("https://peer/hold")
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		})
	}
	waitFor(t, "the member's 50 requests held at once", func() bool { return g.held.Load() == 50 })
	close(g.open)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("member's request: %v", err)
		}
	}
}

// TestDoorJoinedLeaves: a device that becomes a member while connected
// leaves the door at its next stream: it may then hold more than two.
func TestDoorJoinedLeaves(t *testing.T) {
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var joined atomic.Bool
	cfg := testConfig()
	cfg.Member = func(d peer.ID) bool { return d == id.ID && joined.Load() }
	srv := newEndpoint(t, cfg)
	serve(t, srv, whoami())
	c := rawDial(t, srv, id, 0)
	stuckStream(t, c)
	stuckStream(t, c)
	joined.Store(true)
	for range 5 {
		stuckStream(t, c)
	}
	if err := c.Context().Err(); err != nil {
		t.Fatalf("the device that joined lost its connection: %v", context.Cause(c.Context()))
	}
	// The server takes the streams after the client opened them: wait
	// for it to have seen the device's next one.
	deadline := time.Now().Add(10 * time.Second)
	for srv.AtDoor() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := srv.AtDoor(); n != 0 {
		t.Errorf("%d connections at the door after the device joined; want 0", n)
	}
}

// TestDoorRequestDeadline: a stream of a device that is not a member that
// has not finished its headers within Request is reset; the member's
// stream, opened earlier and as stuck, is not.
func TestDoorRequestDeadline(t *testing.T) {
	srv, _, memberID := doorServer(t, transport.DoorConfig{Request: 300 * time.Millisecond}, whoami())
	mine := stuckStream(t, rawDial(t, srv, memberID, 0))
	theirs := stuckStream(t, rawDial(t, srv, nil, 0))
	theirs.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := theirs.Read(make([]byte, 64))
	var se *quic.StreamError
	if !errors.As(err, &se) || !se.Remote {
		t.Fatalf("stuck stream of a stranger: read %v; want reset by the server", err)
	}
	mine.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := mine.Read(make([]byte, 64)); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Errorf("member's stuck stream, opened before the stranger's was reset: read %v; want still open", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestDoorIdle: the connection of a device that is not a member, pinging
// every 20 ms but sending no request, is closed after Idle, naming the
// rule; the member's connection, pinging likewise and opened before it,
// is still open then.
func TestDoorIdle(t *testing.T) {
	srv, _, memberID := doorServer(t, transport.DoorConfig{Idle: 300 * time.Millisecond}, whoami())
	mine := rawDial(t, srv, memberID, 20*time.Millisecond)
	theirs := rawDial(t, srv, nil, 20*time.Millisecond)
	waitClosed(t, theirs, "door idle")
	if err := mine.Context().Err(); err != nil {
		t.Errorf("member's idle connection closed: %v", context.Cause(mine.Context()))
	}
}

// TestDoorConns: the endpoint holds Conns connections of devices that are
// not members at once; one more is closed, naming the rule, while a
// member still connects; once one has gone, another is let in.
func TestDoorConns(t *testing.T) {
	srv, member, _ := doorServer(t, transport.DoorConfig{Conns: 3, Idle: time.Minute}, whoami())
	var held []*quic.Conn
	for range 3 {
		held = append(held, rawDial(t, srv, nil, 0))
	}
	waitFor(t, "3 connections at the door", func() bool { return srv.AtDoor() == 3 })
	waitClosed(t, rawDial(t, srv, nil, 0), "door connections")
	code, _ := get(t, member.Client(srv.ID(), []string{srv.Addr().String()}), "https://peer/v1/whoami")
	if code != http.StatusOK {
		t.Errorf("member with the door full: %d; want 200", code)
	}
	for _, c := range held {
		if err := c.Context().Err(); err != nil {
			t.Errorf("a connection within the cap was closed: %v", context.Cause(c.Context()))
		}
	}
	held[0].CloseWithError(0, "")
	waitFor(t, "2 connections at the door", func() bool { return srv.AtDoor() == 2 })
	late := rawDial(t, srv, nil, 0)
	stuckStream(t, late)
	waitFor(t, "3 connections at the door again", func() bool { return srv.AtDoor() == 3 })
	if err := late.Context().Err(); err != nil {
		t.Errorf("a connection let in after one left was closed: %v", context.Cause(late.Context()))
	}
}

// waitFor polls cond every 10 ms for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("waiting 10 s for %s", what)
}

// TestDoorStrangersBudget: handshakes from addresses where no member has
// connected share one budget whatever their number (here 4, none
// regained), beside each address's own; a member's address keeps its own
// budget when that one is spent, for the member and for others there.
func TestDoorStrangersBudget(t *testing.T) {
	member := newEndpoint(t, testConfig())
	cfg := testConfig()
	cfg.Listen = "0.0.0.0:0"
	cfg.Member = func(id peer.ID) bool { return id == member.ID() }
	cfg.Strangers = transport.LimiterConfig{What: "strangers' handshakes", Burst: 4, Rate: 1e-9}
	srv := newEndpoint(t, cfg)
	serve(t, srv, whoami())
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", srv.Addr().Port)}
	if code, _ := get(t, member.Client(srv.ID(), addrs), "https://peer/v1/whoami"); code != http.StatusOK {
		t.Fatalf("member: %d", code)
	}
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		if got := strangerDials(t, srv, ip, 1); got != 1 {
			t.Errorf("stranger at %s within the strangers' budget: %d of 1 handshakes; want 1", ip, got)
		}
	}
	if got := strangerDials(t, srv, "127.0.0.5", 3); got != 0 {
		t.Errorf("stranger at a fifth address, the strangers' budget spent: %d of 3 handshakes; want 0", got)
	}
	if got := strangerDials(t, srv, "127.0.0.1", 2); got != 2 {
		t.Errorf("at the member's address, the strangers' budget spent: %d of 2 handshakes; want 2", got)
	}
	srv.Disconnect(member.ID())
	if code, _ := get(t, member.Client(srv.ID(), addrs), "https://peer/v1/whoami"); code != http.StatusOK {
		t.Errorf("member reconnecting, the strangers' budget spent: %d; want 200", code)
	}
}
