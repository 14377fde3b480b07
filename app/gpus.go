package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/jobs"
)

// ClearGPU lifts the quarantine of one GPU, ref "NODE:INDEX" (a machine's
// name or ID, and the GPU's index): its node checks that the caller is an
// owner of the pool or the machine's own user, and refuses others naming
// the rule.
func (s *Service) ClearGPU(ctx context.Context, ref string) (GPUClear, error) {
	name, idx, ok := strings.Cut(ref, ":")
	i, err := strconv.Atoi(idx)
	if !ok || name == "" || err != nil || i < 0 {
		return GPUClear{}, fmt.Errorf("%w: %q: want NODE:INDEX, e.g. gpu1:0", ErrInvalid, ref)
	}
	n, err := s.NodeByRef(ctx, name)
	if err != nil {
		return GPUClear{}, err
	}
	q, err := jobs.Client{Conn: s.Peer(n.ID)}.ClearGPU(ctx, i)
	if err != nil {
		return GPUClear{}, err
	}
	return GPUClear{Node: n.ID, NodeName: n.Name, Index: i, UUID: q.UUID, Reason: q.Reason, Since: q.Since}, nil
}

// orEmpty is s, or an empty slice for nil (JSON [] rather than null).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
