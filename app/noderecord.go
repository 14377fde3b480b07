package app

import (
	"context"
	"encoding/json"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// KindNode is the replica record of what a node says about itself, written
// by that node (key: ""; data: NodeRecord).
const KindNode = schema.KindNode

// NodeRecord is what a node says about itself.
type NodeRecord struct {
	Info      agent.Info `json:"info"`
	Addresses []string   `json:"addresses"`
	// Containers says whether the node can run jobs; ContainersError why not.
	Containers      bool   `json:"containers"`
	ContainersError string `json:"containers_error,omitempty"`
	// Cluster is set by an agent that stands for a Slurm cluster (agent
	// --slurm): its partitions, nodes, GPUs and queue.
	Cluster *slurm.Cluster `json:"cluster,omitempty"`
}

// nodeClaims maps what each machine's latest node record claims (name of
// it, "" for nothing) to the machines claiming it: the machines that stand
// for a cluster, or that are a Slurm node. A claim is a machine's own
// word; its callers decide what two claimants mean.
func nodeClaims(ctx context.Context, db *store.DB, name func(NodeRecord) string) (map[string][]string, error) {
	recs, err := db.LatestByKind(ctx, KindNode)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, rec := range recs {
		var nr NodeRecord
		if json.Unmarshal(rec.Data, &nr) != nil {
			continue
		}
		if n := name(nr); n != "" {
			out[n] = append(out[n], rec.Origin)
		}
	}
	return out, nil
}
