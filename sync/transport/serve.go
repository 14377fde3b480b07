package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// ErrServing means Serve was called while the endpoint already serves.
var ErrServing = errors.New("endpoint is already serving")

// Serve answers HTTP/3 requests (and HTTP/1.1 on the TCP data path) with
// h until ctx is cancelled, then closes
// every incoming connection and returns once h's calls have returned.
// Wrap h in Authorize: Serve itself admits any device with a valid
// certificate, those that are not members (Config.Member) through the
// door (door.go).
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
	members := &http3.Server{Handler: h, Logger: e.log}
	door := &http3.Server{Handler: e.doorHandler(h), Logger: e.log, MaxHeaderBytes: e.door.cfg.HeaderBytes}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		qc, err := ln.Accept(ctx)
		switch {
		case err == nil && ctx.Err() != nil:
			qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
			return nil
		case ctx.Err() != nil || (err != nil && e.isClosed()):
			return nil
		case err != nil:
			return fmt.Errorf("serve http/3: %w", err)
		}
		e.trackQUIC(qc)
		wg.Go(func() { e.serveConn(ctx, qc, members, door) })
	}
}

// serveConn answers the requests of one connection until it ends or ctx is
// cancelled, through the door unless its device is a member, and returns
// once their handlers have returned.
func (e *Endpoint) serveConn(ctx context.Context, qc *quic.Conn, members, door *http3.Server) {
	stop := context.AfterFunc(ctx, func() { qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "") })
	defer stop()
	dc, ok := e.door.admit(qc)
	if !ok {
		return
	}
	defer dc.leave()
	srv := members
	if dc != nil {
		srv = door
	}
	hc, err := srv.NewRawServerConn(qc)
	if err != nil {
		qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeInternalError), "")
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for {
			str, err := qc.AcceptUniStream(context.Background())
			if err != nil || !dc.uniStream() {
				return
			}
			wg.Go(func() { hc.HandleUnidirectionalStream(str) })
		}
	})
	for {
		str, err := qc.AcceptStream(context.Background())
		if err != nil {
			return
		}
		done, ok := dc.request(str)
		if !ok {
			return
		}
		wg.Go(func() {
			defer done()
			hc.HandleRequestStream(str)
		})
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
