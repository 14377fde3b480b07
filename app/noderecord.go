package app

import (
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/schema"
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
