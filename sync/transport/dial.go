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
// returns the first connection whose handshake succeeds; the others are
// cancelled or closed before it returns.
func (e *Endpoint) dialFirst(ctx context.Context, addrs []string, tlsConf *tls.Config, qconf *quic.Config) (*quic.Conn, error) {
	if len(addrs) == 0 {
		return nil, errors.New("dial: no address known")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		conn *quic.Conn
		err  error
	}
	results := make(chan result, len(addrs))
	for _, addr := range addrs {
		go func() {
			conn, err := e.dialOne(ctx, addr, tlsConf.Clone(), qconf)
			results <- result{conn, err}
		}()
	}
	var won *quic.Conn
	var errs []error
	for range addrs {
		r := <-results
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
		case won == nil:
			won = r.conn
			cancel()
		default:
			r.conn.CloseWithError(0, "duplicate connection")
		}
	}
	if won == nil {
		return nil, errors.Join(errs...)
	}
	return won, nil
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
