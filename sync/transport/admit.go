package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"github.com/quic-go/quic-go"
)

// Handshakes cost the server a key exchange, a signature and the check of
// the peer's, whoever the peer is: the device is known only once they are
// done. So each source address has a budget of handshakes (Config.
// Handshakes), spent before any cryptography. Over QUIC a source that
// handshook lately must first prove it owns its address (a Retry, one round
// trip), so that packets with a forged source cannot spend another's
// budget; a source over its budget is refused (CONNECTION_REFUSED) at its
// first packet. On the TCP data path the kernel's handshake proves the
// address, and a source over its budget is refused at its ClientHello.

// errTooManyHandshakes refuses a handshake over its source's budget.
var errTooManyHandshakes = errors.New("too many handshakes from this address")

// guardQUIC installs the handshake budget on the QUIC transport.
func (e *Endpoint) guardQUIC(tr *quic.Transport) {
	tr.VerifySourceAddress = func(a net.Addr) bool {
		return !e.handshakes.Idle(netAddrIP(a))
	}
	tr.ConnContext = func(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
		if !e.handshakes.Allow(netAddrIP(ci.RemoteAddr)) {
			return ctx, errTooManyHandshakes
		}
		return ctx, nil
	}
}

// guardData returns the data path's server TLS config: the handshake
// budget is checked at the ClientHello, and a connection whose handshake
// proves a device is filed under it for Disconnect.
func (e *Endpoint) guardData(base *tls.Config) *tls.Config {
	c := base.Clone()
	c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if !e.handshakes.Allow(netAddrIP(hello.Conn.RemoteAddr())) {
			return nil, errTooManyHandshakes
		}
		tc, ok := hello.Conn.(*trackedConn)
		if !ok {
			return nil, nil
		}
		conf := base.Clone()
		conf.VerifyConnection = func(cs tls.ConnectionState) error {
			id, err := stateID(&cs)
			if err != nil {
				return err
			}
			tc.track(id)
			return nil
		}
		return conf, nil
	}
	return c
}
