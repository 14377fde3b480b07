package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/quic-go/quic-go"
)

// dialFirst dials every address at once over the endpoint's socket and
// returns the first connection whose handshake succeeds, and its address;
// the others are cancelled or closed before it returns.
func (e *Endpoint) dialFirst(ctx context.Context, addrs []string, tlsConf *tls.Config, qconf *quic.Config) (*quic.Conn, string, error) {
	if len(addrs) == 0 {
		return nil, "", errors.New("dial: no address known")
	}
	return firstOf(ctx, addrs,
		func(ctx context.Context, addr string) (*quic.Conn, error) {
			return e.dialOne(ctx, addr, tlsConf.Clone(), qconf)
		},
		func(c *quic.Conn) { c.CloseWithError(0, "duplicate connection") })
}

// firstOf runs dial on every address at once and returns the first
// connection made and its address, cancelling the other dials and dropping
// what they make anyway; with none made, every error joined.
func firstOf[C any](ctx context.Context, addrs []string, dial func(context.Context, string) (C, error), drop func(C)) (C, string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		conn C
		addr string
		err  error
	}
	results := make(chan result, len(addrs))
	for _, addr := range addrs {
		go func() {
			conn, err := dial(ctx, addr)
			results <- result{conn, addr, err}
		}()
	}
	var won C
	var wonAddr string
	var ok bool
	var errs []error
	for range addrs {
		r := <-results
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
		case !ok:
			won, wonAddr, ok = r.conn, r.addr, true
			cancel()
		default:
			drop(r.conn)
		}
	}
	if !ok {
		return won, "", errors.Join(errs...)
	}
	return won, wonAddr, nil
}

func (e *Endpoint) dialOne(ctx context.Context, addr string, tlsConf *tls.Config, qconf *quic.Config) (*quic.Conn, error) {
	udp, err := resolveUDP(ctx, addr)
	if err != nil {
		return nil, err
	}
	conn, err := e.tr.Dial(ctx, udp, tlsConf, qconf)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	e.trackQUIC(conn)
	return conn, nil
}

func resolveUDP(ctx context.Context, addr string) (*net.UDPAddr, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", addr, err)
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", addr, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("resolve %q: no address", addr)
	}
	pn, err := net.LookupPort("udp", port)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", addr, err)
	}
	return &net.UDPAddr{IP: ips[0].IP, Zone: ips[0].Zone, Port: pn}, nil
}
