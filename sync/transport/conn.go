package transport

import (
	"context"
	"fmt"
	"net/http"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/labpool/labpool/sync/peer"
)

// Conn is one unpinned connection, made by DialAny.
type Conn struct {
	qc   *quic.Conn
	cc   *http3.ClientConn
	peer peer.ID
}

// DialAny connects to addr and accepts whichever device answers: its ID is
// learnt, not checked. Use it only where a proof checks the peer instead,
// i.e. to join a pool with KeyingMaterial.
func (e *Endpoint) DialAny(ctx context.Context, addr string) (*Conn, error) {
	qc, _, err := e.dialFirst(ctx, []string{addr}, e.clientTLS(nil), e.clientQUIC())
	if err != nil {
		return nil, err
	}
	cs := qc.ConnectionState().TLS
	id, err := stateID(&cs)
	if err != nil { // unreachable: verifyPeer checked it
		qc.CloseWithError(0, "")
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	tr := &http3.Transport{Logger: e.log}
	return &Conn{qc: qc, cc: tr.NewClientConn(qc), peer: id}, nil
}

// PeerID returns the device at the other end.
func (c *Conn) PeerID() peer.ID { return c.peer }

// KeyingMaterial returns the join exporter of this session; the server
// reads the same bytes with transport.KeyingMaterial.
func (c *Conn) KeyingMaterial() ([]byte, error) {
	cs := c.qc.ConnectionState().TLS
	return exportJoin(&cs)
}

// Client returns an HTTP client that sends every request on this
// connection, whatever the URL's host.
func (c *Conn) Client() *http.Client {
	return &http.Client{Transport: connRoundTripper{c.cc}}
}

// Close closes the connection.
func (c *Conn) Close() error {
	return c.qc.CloseWithError(0, "")
}

type connRoundTripper struct{ cc *http3.ClientConn }

func (rt connRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return rt.cc.RoundTrip(retarget(req))
}
