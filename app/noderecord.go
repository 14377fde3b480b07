package app

import (
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
)

// KindNode is the replica record of what a node says about itself, written
// by that node (key: ""; data: NodeRecord).
const KindNode = "node"

// NodeRecord is what a node says about itself.
type NodeRecord struct {
	Info      agent.Info `json:"info"`
	Addresses []string   `json:"addresses"`
	// Containers says whether the node can run jobs; ContainersError why not.
	Containers      bool   `json:"containers"`
	ContainersError string `json:"containers_error,omitempty"`
}

// KindSample1s is the kind of the 1 s samples, which app/history owns.
//
// Deprecated: use history.KindSample1s (kept while the tests of app/web and
// app/cli still name it here).
const KindSample1s = history.KindSample1s
