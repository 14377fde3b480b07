package history

import (
	"context"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// Store answers queries about the samples in the replica.
type Store struct {
	db *store.DB
}

// NewStore returns the queries over db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Latest returns the newest 1 s sample of every node that has one. A
// malformed record from a peer is left out, as if the node sent none.
func (s *Store) Latest(ctx context.Context) (map[string]agent.Sample, error) {
	recs, err := s.db.LatestByKind(ctx, KindSample1s)
	if err != nil {
		return nil, fmt.Errorf("read latest samples: %w", err)
	}
	m := make(map[string]agent.Sample, len(recs))
	for _, r := range recs {
		if sm, err := Decode(r.Data); err == nil {
			m[r.Origin] = sm
		}
	}
	return m, nil
}

// Tier is the finest tier whose retention covers window.
func Tier(window time.Duration) string {
	switch {
	case window > retention[KindSample1m]:
		return KindSample15m
	case window > retention[KindSample1s]:
		return KindSample1m
	}
	return KindSample1s
}

// Window returns node's samples of the window that ends at now, oldest
// first, from Tier(window). Malformed records are skipped.
func (s *Store) Window(ctx context.Context, node string, window time.Duration, now time.Time) ([]agent.Sample, error) {
	recs, err := s.db.Range(ctx, node, Tier(window), now.Add(-window), now.Add(time.Minute))
	if err != nil {
		return nil, err
	}
	out := make([]agent.Sample, 0, len(recs))
	for _, r := range recs {
		if sm, err := Decode(r.Data); err == nil {
			out = append(out, sm)
		}
	}
	return out, nil
}
