package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/quic-go/quic-go/http3"
)

// ErrServing means Serve was called while the endpoint already serves.
var ErrServing = errors.New("endpoint is already serving")

// Serve answers HTTP/3 requests (and HTTP/1.1 on the TCP data path) with
// h until ctx is cancelled, then closes
// every incoming connection and returns once h's calls have returned.
// Wrap h in Authorize: Serve itself admits any device with a valid
// certificate.
func (e *Endpoint) Serve(ctx context.Context, h http.Handler) error {
	if err := e.startServing(); err != nil {
		return err
	}
	defer e.stopServing()
	ln, err := e.tr.Listen(e.serverTLS(), e.qconf)
	if err != nil {
		return fmt.Errorf("listen for quic: %w", err)
	}
	defer ln.Close()
	stopData := e.serveData(h)
	defer stopData()
	srv := &http3.Server{Handler: h, Logger: e.log}
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeListener(trackingListener{ln, e}) }()
	select {
	case <-ctx.Done():
		srv.Close()
		<-errc
		return nil
	case err := <-errc:
		srv.Close()
		if e.isClosed() {
			return nil
		}
		return fmt.Errorf("serve http/3: %w", err)
	}
}

func (e *Endpoint) startServing() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return fmt.Errorf("serve: %w", net.ErrClosed)
	case e.serving:
		return ErrServing
	}
	e.serving = true
	return nil
}

func (e *Endpoint) stopServing() {
	e.mu.Lock()
	e.serving = false
	e.mu.Unlock()
}

func (e *Endpoint) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}
