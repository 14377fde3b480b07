//go:build linux

package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/sys/unix"

	"github.com/labpool/labpool/sync/peer"
)

// TestTrustDoor: a device that is not a member of the pool (a stranger
// with a certificate of its own; a removed member) gets from an agent only
// what the join exchange needs. Its flood of streams (10 connections of 1000
// streams, each stuck in the HTTP/3 header read, as the audit did) is cut
// at the third stream of each connection, naming the rule, and the agent's
// memory does not follow the flood; a stream that never finishes its
// headers is reset; a connection that opens nothing is closed whatever
// its keepalives; the member's telemetry flows throughout.
func TestTrustDoor(t *testing.T) {
	l := newLAN(t, "agent", "member", "removed", "stranger")
	agent, member, removed, stranger := l.host("agent"), l.host("member"), l.host("removed"), l.host("stranger")
	for _, h := range []*host{agent, member, removed} {
		h.agent()
		h.waitDaemon()
	}
	joinAll(t, agent, member, removed)
	waitFor(t, 20*time.Second, "member follows agent", func() error { return liveNodes(member, "agent") })
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	att := newAttacker(t, stranger.ns, stranger.ip, id)
	target := agent.ip + ":7420"
	pid := daemonPID(t, agent)

	t.Run("stream flood", func(t *testing.T) {
		rss0 := rssKB(t, pid)
		conns := make([]*quic.Conn, 10)
		var wg sync.WaitGroup
		for i := range conns {
			conns[i] = att.dial(t, target, 0)
			wg.Go(func() { floodStreams(conns[i], 1000) })
		}
		peak := rss0
		allClosed := func() bool {
			for _, c := range conns {
				if c.Context().Err() == nil {
					return false
				}
			}
			return true
		}
		deadline := time.Now().Add(15 * time.Second)
		for !allClosed() && time.Now().Before(deadline) {
			peak = max(peak, rssKB(t, pid))
			time.Sleep(50 * time.Millisecond)
		}
		peak = max(peak, rssKB(t, pid))
		for _, c := range conns {
			c.CloseWithError(0, "")
		}
		wg.Wait()
		growth := float64(peak-rss0) / 1024
		t.Logf("agent RSS %d KiB before the flood, %d KiB at its peak (+%.1f MiB)", rss0, peak, growth)
		if growth >= 32 {
			t.Errorf("agent RSS grew by %.1f MiB under the flood; want under 32", growth)
		}
		for i, c := range conns {
			if err := refusedBy(c, "streams"); err != nil {
				t.Errorf("flood connection %d: %v", i, err)
			}
		}
		if err := liveNodes(member, "agent"); err != nil {
			t.Errorf("member's telemetry after the flood: %v", err)
		}
	})

	t.Run("headers never finished", func(t *testing.T) {
		c := att.dial(t, target, 0)
		defer c.CloseWithError(0, "")
		str, err := c.OpenStreamSync(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		str.Write(partialHeaders)
		str.SetReadDeadline(time.Now().Add(15 * time.Second))
		start := time.Now()
		_, err = str.Read(make([]byte, 64))
		var se *quic.StreamError
		if !errors.As(err, &se) || !se.Remote {
			t.Fatalf("stream with unfinished headers: read %v; want it reset by the agent", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("stream with unfinished headers reset after %v; want within a few seconds", d)
		}
	})

	t.Run("removed device", func(t *testing.T) {
		rid, err := peer.LoadOrCreate(removed.data)
		if err != nil {
			t.Fatal(err)
		}
		mustCLI(t, agent, "pool", "remove", rid.ID.String())
		waitFor(t, 10*time.Second, "the removal on agent", func() error { return removedOn(agent, rid.ID.String()) })
		removed.kill() // its own agent's reconnections are not the attack
		c := newAttacker(t, removed.ns, removed.ip, rid).dial(t, target, 0)
		defer c.CloseWithError(0, "")
		go floodStreams(c, 1000)
		select {
		case <-c.Context().Done():
		case <-time.After(15 * time.Second):
			t.Fatal("the removed device's connection with 1000 streams still open after 15 s")
		}
		if err := refusedBy(c, "streams"); err != nil {
			t.Error(err)
		}
	})

	t.Run("idle despite keepalives", func(t *testing.T) {
		c := att.dial(t, target, 200*time.Millisecond)
		defer c.CloseWithError(0, "")
		select {
		case <-c.Context().Done():
		case <-time.After(30 * time.Second):
			t.Fatal("a stranger's connection with keepalives and no request still open after 30 s")
		}
		if err := refusedBy(c, "idle"); err != nil {
			t.Error(err)
		}
		if err := liveNodes(member, "agent"); err != nil {
			t.Errorf("member's telemetry: %v", err)
		}
	})
}

// partialHeaders is the start of an HTTP/3 HEADERS frame that announces
// 4000 bytes and sends one.
var partialHeaders = []byte{0x01, 0x4f, 0xa0, 0x00}

// floodStreams opens n streams on c, each stuck in the header read, until
// c is closed.
func floodStreams(c *quic.Conn, n int) {
	for range n {
		str, err := c.OpenStreamSync(c.Context())
		if err != nil {
			return
		}
		if _, err := str.Write(partialHeaders); err != nil {
			return
		}
	}
}

// refusedBy checks that the agent closed c with a refusal naming rule.
func refusedBy(c *quic.Conn, rule string) error {
	err := context.Cause(c.Context())
	var ae *quic.ApplicationError
	if !errors.As(err, &ae) || !ae.Remote {
		return fmt.Errorf("connection ended with %v; want closed by the agent", err)
	}
	if !strings.HasPrefix(ae.ErrorMessage, "refused: ") || !strings.Contains(ae.ErrorMessage, "(rule: door "+rule+")") {
		return fmt.Errorf("agent closed the connection with %q; want a refusal naming the rule door %s", ae.ErrorMessage, rule)
	}
	return nil
}

// attacker speaks raw QUIC with its own certificate from a network
// namespace: what a hostile device on the LAN can send.
type attacker struct {
	tr  *quic.Transport
	tls *tls.Config
}

// newAttacker binds a UDP socket to ip in namespace ns (sockets stay in
// the namespace they were made in).
func newAttacker(t testing.TB, ns, ip string, id *peer.Identity) *attacker {
	t.Helper()
	udp, err := udpIn(ns, ip)
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: udp}
	t.Cleanup(func() { tr.Close(); udp.Close() })
	return &attacker{tr: tr, tls: &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.Cert},
		InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}, ServerName: "labpool",
	}}
}

func udpIn(ns, ip string) (*net.UDPConn, error) {
	type result struct {
		c   *net.UDPConn
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var r result
		defer func() { res <- r }()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			r.err = err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			r.err = fmt.Errorf("enter %s: %w", ns, err)
			return
		}
		r.c, r.err = net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(ip)})
	}()
	r := <-res
	return r.c, r.err
}

// dial opens a QUIC connection to target, pinging every keepAlive (0:
// never).
func (a *attacker) dial(t testing.TB, target string, keepAlive time.Duration) *quic.Conn {
	t.Helper()
	c, err := a.tryDial(target, keepAlive)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (a *attacker) tryDial(target string, keepAlive time.Duration) (*quic.Conn, error) {
	addr, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := a.tr.Dial(ctx, addr, a.tls, &quic.Config{KeepAlivePeriod: keepAlive, MaxIdleTimeout: time.Minute})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	return c, nil
}
