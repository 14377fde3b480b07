package app

import (
	"context"
	"io"

	"github.com/labpool/labpool/node/peerapi"
)

// Do implements peerapi.Doer: it calls a node's peer API over a pinned
// client, the typed clients of node/... on top (jobs.Client,
// alerts.Client...).
func (s *Service) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	return s.nodeStreamWith(ctx, node, r.Method, r.Path, r.Body, r.Header)
}

// Peer is the node's peer API, for a typed client:
// jobs.Client{Conn: s.Peer(node)}.Stop(ctx, id).
func (s *Service) Peer(node string) peerapi.Conn { return peerapi.Conn{Doer: s, Node: node} }
