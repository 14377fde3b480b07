package transport_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// rawGet sends one GET for path on c and reads its answer's status.
func rawGet(t *testing.T, c *quic.Conn, path string) int {
	t.Helper()
	cc := (&http3.Transport{}).NewClientConn(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://labpool"+path, nil)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDoorHogEvicted: strangers that hold every slot of the door, each
// with its one request answered, do not keep a newcomer out: the oldest
// of them is closed to make room, naming the rule, and the newcomer's
// request is answered. (The audit's attack: 40 addresses, a request every
// 4 s, and `pool join` found the door full.)
func TestDoorHogEvicted(t *testing.T) {
	srv, _, _ := doorServer(t, transport.DoorConfig{Conns: 3, Idle: time.Minute}, whoami())
	var hogs []*quic.Conn
	for range 3 {
		c := rawDial(t, srv, nil, 0)
		if code := rawGet(t, c, "/v1/whoami"); code != http.StatusOK {
			t.Fatalf("hog's request: %d", code)
		}
		hogs = append(hogs, c)
	}
	waitFor(t, "3 connections at the door", func() bool { return srv.AtDoor() == 3 })
	joiner := rawDial(t, srv, nil, 0)
	if code := rawGet(t, joiner, "/v1/whoami"); code != http.StatusOK {
		t.Fatalf("newcomer's request with the door full of finished attempts: %d", code)
	}
	waitClosed(t, hogs[0], "door connections")
	for _, c := range hogs[1:] {
		if err := c.Context().Err(); err != nil {
			t.Errorf("a younger hog was closed (%v); want only the oldest", context.Cause(c.Context()))
		}
	}
}

// TestDoorIdleNotReset: a stranger's requests, one every 200 ms, do not
// keep its connection past Idle (300 ms) after it connected.
func TestDoorIdleNotReset(t *testing.T) {
	srv, _, _ := doorServer(t, transport.DoorConfig{Idle: 300 * time.Millisecond}, whoami())
	c := rawDial(t, srv, nil, 0)
	cc := (&http3.Transport{}).NewClientConn(c)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for c.Context().Err() == nil {
			req, _ := http.NewRequestWithContext(c.Context(), http.MethodGet, "https://labpool/v1/whoami", nil)
			if resp, err := cc.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
			select {
			case <-tick.C:
			case <-c.Context().Done():
			}
		}
	}()
	waitClosed(t, c, "door idle")
}

// TestDataPathStranger: a device that is not a member, with a valid
// certificate of its own, cannot finish a TLS handshake on the TCP data
// path (it serves members only: the join exchange is over QUIC); a member
// can.
func TestDataPathStranger(t *testing.T) {
	srv, _, memberID := doorServer(t, transport.DoorConfig{}, whoami())
	stranger, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := dataHandshake(srv, stranger); err == nil {
		t.Errorf("stranger's TLS handshake on the data path succeeded; want it refused")
	}
	if err := dataHandshake(srv, memberID); err != nil {
		t.Errorf("member's TLS handshake on the data path: %v", err)
	}
}

// dataHandshake does a TLS handshake as id on srv's TCP data path and
// reads from it (TLS 1.3 reports a refused client certificate only then).
func dataHandshake(srv *transport.Endpoint, id *peer.Identity) error {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", srv.DataAddr().String(), &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{id.Cert},
		InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}, ServerName: "labpool",
	})
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET /v1/whoami HTTP/1.1\r\nHost: labpool\r\n\r\n")); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 1))
	return err
}

// TestDoorPaths: with Paths set, a stranger's request reaches the handler
// only for one of them; any other is answered 403 by the door, naming the
// rule, though the handler (here without Authorize) would serve it. A
// member reaches every path.
func TestDoorPaths(t *testing.T) {
	srv, member, _ := doorServer(t, transport.DoorConfig{Paths: []string{"/v1/pool/join"}, Requests: 10}, whoami())
	cc := (&http3.Transport{}).NewClientConn(rawDial(t, srv, nil, 0))
	for _, path := range []string{"/v1/pool/join", "/v1/whoami", "/v1/node/sample", "/v1/pool/join/", "/v1/pool/join?x=1"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://labpool"+path, nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantCode := http.StatusForbidden
		if path == "/v1/pool/join" || strings.HasPrefix(path, "/v1/pool/join?") {
			wantCode = http.StatusOK // the query is not the path
		}
		if resp.StatusCode != wantCode || (wantCode == http.StatusForbidden && !strings.Contains(string(body), "(rule: door paths)")) {
			t.Errorf("stranger's GET %s: %d %s; want %d naming the rule door paths", path, resp.StatusCode, body, wantCode)
		}
	}
	if code, _ := get(t, member.Client(srv.ID(), []string{srv.Addr().String()}), "https://peer/v1/whoami"); code != http.StatusOK {
		t.Errorf("member's GET /v1/whoami: %d; want 200", code)
	}
}

// TestDoorFullRefused: a device that finds the door full, every attempt
// there unfinished (a request open, within Proof), reads Refused (the join waits its turn and tries
// again, as when its handshake is refused), and gets in once there is
// room.
func TestDoorFullRefused(t *testing.T) {
	srv, _, _ := doorServer(t, transport.DoorConfig{Conns: 1, Proof: time.Hour}, whoami())
	holder := rawDial(t, srv, nil, 0)
	stuckStream(t, holder)
	waitFor(t, "1 connection at the door", func() bool { return srv.AtDoor() == 1 })
	joiner := newEndpoint(t, testConfig())
	join := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := joiner.DialAny(ctx, srv.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://labpool/v1/pool/join", nil)
		resp, err := c.Client().Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := join(); !transport.Refused(err) {
		t.Fatalf("join with the door full: %v; want Refused", err)
	}
	holder.CloseWithError(0, "")
	waitFor(t, "an empty door", func() bool { return srv.AtDoor() == 0 })
	if err := join(); err != nil {
		t.Errorf("join once the door has room: %v", err)
	}
}

// TestDoorUnprovedEvicted: a stranger that holds the door's one place with
// a request it never sends whole (half its headers) holds it only for
// Proof: a newcomer then takes the place, the holder is closed naming the
// rule, and the newcomer's request, body and all, reaches the handler.
func TestDoorUnprovedEvicted(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	})
	srv, _, _ := doorServer(t, transport.DoorConfig{Conns: 1, Proof: 100 * time.Millisecond}, echo)
	holder := rawDial(t, srv, nil, 0)
	stuckStream(t, holder)
	waitFor(t, "1 connection at the door", func() bool { return srv.AtDoor() == 1 })
	time.Sleep(200 * time.Millisecond) // past Proof
	code, body := rawPost(t, rawDial(t, srv, nil, 0), "/v1/pool/join", "join proof")
	if code != http.StatusOK || body != "join proof" {
		t.Fatalf("newcomer's request beside an unproved holder: %d %q; want 200 and its body echoed", code, body)
	}
	waitClosed(t, holder, "door connections")
}

// TestDoorBodyBytes: a stranger's request body over BodyBytes is answered
// 413 by the door, naming the rule; one of BodyBytes reaches the handler.
func TestDoorBodyBytes(t *testing.T) {
	size := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	})
	srv, _, _ := doorServer(t, transport.DoorConfig{BodyBytes: 1000}, size)
	tests := []struct {
		n        int
		wantCode int
		want     string
	}{
		{0, http.StatusOK, "0"},
		{1000, http.StatusOK, "1000"},
		{1001, http.StatusRequestEntityTooLarge, "(rule: door body)"},
	}
	for _, tt := range tests {
		code, body := rawPost(t, rawDial(t, srv, nil, 0), "/v1/pool/join", strings.Repeat("x", tt.n))
		if code != tt.wantCode || !strings.Contains(body, tt.want) {
			t.Errorf("body of %d bytes: %d %q; want %d with %q", tt.n, code, body, tt.wantCode, tt.want)
		}
	}
}

// rawPost sends one POST of body to path on c and reads its answer.
func rawPost(t *testing.T, c *quic.Conn, path, body string) (int, string) {
	t.Helper()
	cc := (&http3.Transport{}).NewClientConn(c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://labpool"+path, strings.NewReader(body))
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
