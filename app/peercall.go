package app

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/sync/transport"
)

// Peer is the node's peer API, for a typed client of node/...:
// jobs.Client{Conn: s.Peer(node)}.Stop(ctx, id).
func (s *Service) Peer(node string) peerapi.Conn { return peerapi.Conn{Doer: s, Node: node} }

// Do implements peerapi.Doer: it calls a node's peer API over a pinned
// client and returns the reply body of a success; a failure becomes an
// *APIError with the node's message. The typed clients of node/... call
// it (jobs.Client{Conn: s.Peer(node)}).
func (s *Service) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	method, path, body, hdr := r.Method, r.Path, r.Body, r.Header
	hc, err := s.caller.NodeClient(ctx, node)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://node"+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil && transport.ConnectionLost(err) && req.GetBody != nil {
		// The node restarted under an old connection: send once more.
		if req.Body, err = req.GetBody(); err == nil {
			resp, err = hc.Do(req)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", shortID(node), err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, ErrorFromResponse(resp)
	}
	return resp.Body, nil
}
