package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"

	"github.com/quic-go/quic-go"
)

// Handshakes cost the server a key exchange, a signature and the check of
// the peer's, whoever the peer is: the device is known only once they are
// done. So each source address has a budget of handshakes (Config.
// Handshakes), spent before any cryptography, and a source over it is
// refused at its first packet (QUIC CONNECTION_REFUSED, or a TLS alert
// at the ClientHello on the TCP data path).
//
// A QUIC packet's source address can be forged, so a source has two
// budgets: one for handshakes from an address not proven, and one for
// those from an address that is (after a Retry, one round trip; TCP
// connections are proven by the kernel). Forged packets spend only the
// first: the real owner of the address, once that is spent, proves its
// address and spends the second. A source that has spent both is refused
// without a Retry, which would cost as much as the refusal itself, until
// its proven budget refills.

// Each source's budgets multiply with the sources: a stranger with many
// addresses gets as many budgets. So handshakes from addresses where no
// member has connected lately (door.known) also share one budget for the
// whole endpoint (Config.Strangers): a flood from any number of addresses
// costs us at most that many handshakes a second, while members, from the
// addresses they use, keep their own budgets. A member at a new address
// may wait for that budget during a flood; our own connections to it (the
// replica's followers dial members) are not budgeted.

// errTooManyHandshakes refuses a handshake over its source's budget.
var errTooManyHandshakes = errors.New("too many handshakes from this address")

// guardQUIC installs the handshake budget on the QUIC transport.
func (e *Endpoint) guardQUIC(tr *quic.Transport) {
	tr.VerifySourceAddress = func(a net.Addr) bool {
		ip := netAddrIP(a)
		return e.handshakes.Spent(ip) && !e.proven.Spent(ip)
	}
	tr.ConnContext = func(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
		budget := e.handshakes
		if ci.AddrVerified {
			budget = e.proven
		}
		if !e.allowHandshake(netAddrIP(ci.RemoteAddr), budget) {
			return ctx, errTooManyHandshakes
		}
		return ctx, nil
	}
}

// errDataStranger refuses the TLS handshake of a device that is not a
// member on the data path: it may reach only the join exchange, which is
// over QUIC. (TLS carries no reason: the client reads a bad_certificate
// alert, the server's log the rule.)
var errDataStranger = errors.New("refused: the tcp data path serves members of the pool only (rule: door data path)")

// guardData returns the data path's server TLS config: the handshake
// budget is checked at the ClientHello, a device that is not a member is
// refused, and a connection whose handshake proves a member is filed under
// it for Disconnect.
func (e *Endpoint) guardData(base *tls.Config) *tls.Config {
	c := base.Clone()
	c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if !e.allowHandshake(netAddrIP(hello.Conn.RemoteAddr()), e.proven) {
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
			if !e.door.isMember(id) {
				return errDataStranger
			}
			tc.track(id)
			return nil
		}
		return conf, nil
	}
	return c
}

// allowHandshake spends one handshake of ip's budget and, when no member
// has connected from ip lately, one of the strangers' budget; it reports
// false, spending nothing more, when either is spent.
func (e *Endpoint) allowHandshake(ip netip.Addr, budget *Limiter) bool {
	stranger := e.strangers != nil && !e.door.knownAddr(ip)
	if stranger && e.strangers.Exhausted(netip.Addr{}) {
		return false
	}
	if !budget.Allow(ip) {
		return false
	}
	return !stranger || e.strangers.Allow(netip.Addr{})
}
