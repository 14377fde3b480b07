// Package history keeps the telemetry of the pool over time in the replica:
// the Recorder writes this machine's samples at 1 s and their means at 1 min
// and 15 min, pruning each tier to its retention; Store answers the queries
// the service makes of them (the latest sample of each node, a window of one
// node's samples from the finest tier that covers it).
//
// Every node is the only writer of its own samples; the replica carries
// them to the others. Recorder.Run returns when ctx is cancelled or its
// samples end, and starts no goroutine.
package history

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/agent"
)

// Record kinds in the replica. Every node is the only writer of its own.
const (
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

// MaxWindow is the longest window a query covers (the 15 min tier's
// retention, with a day to spare for a leap year).
const MaxWindow = 366 * 24 * time.Hour

// Key orders samples by time within a tier.
func Key(t time.Time) string { return fmt.Sprintf("%012d", t.Unix()) }

// Decode reads one sample record's data.
func Decode(data []byte) (agent.Sample, error) {
	var s agent.Sample
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("decode sample: %w", err)
	}
	return s, nil
}
