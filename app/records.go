package app

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/agent"
)

// Record kinds in the replica. Every node is the only writer of its own.
const (
	KindNode      = "node"       // key "": NodeRecord
	KindSample1s  = "sample.1s"  // key: unix seconds; agent.Sample
	KindSample1m  = "sample.1m"  // key: unix seconds of the minute; agent.Sample (means)
	KindSample15m = "sample.15m" // key: unix seconds; agent.Sample (means)
)

// Retention of each sample tier.
var retention = map[string]time.Duration{
	KindSample1s:  time.Hour,
	KindSample1m:  7 * 24 * time.Hour,
	KindSample15m: 365 * 24 * time.Hour,
}

// NodeRecord is what a node says about itself.
type NodeRecord struct {
	Info      agent.Info `json:"info"`
	Addresses []string   `json:"addresses"`
	// Containers says whether the node can run jobs; ContainersError why not.
	Containers      bool   `json:"containers"`
	ContainersError string `json:"containers_error,omitempty"`
}

// sampleKey orders samples by time within a tier.
func sampleKey(t time.Time) string { return fmt.Sprintf("%012d", t.Unix()) }

func decodeSample(data []byte) (agent.Sample, error) {
	var s agent.Sample
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("decode sample: %w", err)
	}
	return s, nil
}
