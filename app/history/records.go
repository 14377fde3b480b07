// Package history keeps the telemetry of the pool over time in the replica.
// The Recorder writes this machine's latest sample (kind sample.live, the
// full agent.Sample the dashboard shows), every sample at 1 s, and as each
// period closes its aggregate at 1 min, 15 min and 3 h: the lowest, mean and
// highest value of every figure, so a one-second spike survives into the
// one-year view. Each tier is pruned to its retention. Store answers the
// queries the service makes of them: the latest sample of each node, a
// window of one node's points from the tier that fits it, the pool's GPUs
// busy, idle but granted and free over time.
//
// Tier records are compact (see Encode); records of older versions
// (agent.Sample JSON means) are still read.
//
// Every node is the only writer of its own samples; the replica carries
// them to the others. Recorder.Run returns when ctx is cancelled or its
// samples end, and starts no goroutine.
package history

import (
	"github.com/labpool/labpool/sync/schema"

	"encoding/json"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// Record kinds in the replica. Every node is the only writer of its own.
const (
	KindLive      = schema.KindLive      // key "": the latest agent.Sample (JSON), replaced every second
	KindSample1s  = schema.KindSample1s  // key: unix seconds; a Point (older: agent.Sample)
	KindSample1m  = schema.KindSample1m  // key: unix seconds of the minute; a Point (older: agent.Sample means)
	KindSample15m = schema.KindSample15m // key: unix seconds; a Point (older: agent.Sample means)
	KindSample3h  = schema.KindSample3h  // key: unix seconds; a Point
)

// Resolution is one tier of the history: its step and retention.
type Resolution struct {
	Name string        // "1s", "1m", "15m", "3h"
	Kind string        // record kind
	Step time.Duration // period of one point
	Keep time.Duration // retention
}

// Resolutions, finest first.
var Resolutions = []Resolution{
	{"1s", KindSample1s, time.Second, time.Hour},
	{"1m", KindSample1m, time.Minute, 7 * 24 * time.Hour},
	{"15m", KindSample15m, 15 * time.Minute, 366 * 24 * time.Hour},
	{"3h", KindSample3h, 3 * time.Hour, 2 * 366 * 24 * time.Hour},
}

func tierOf(kind string) (Resolution, bool) {
	for _, t := range Resolutions {
		if t.Kind == kind {
			return t, true
		}
	}
	return Resolution{}, false
}

// MaxWindow is the longest window of the History call (the 15 min tier's
// retention).
const MaxWindow = 366 * 24 * time.Hour

// MaxSeriesWindow is the longest window of a series: the coarsest tier's
// retention.
const MaxSeriesWindow = 2 * 366 * 24 * time.Hour

// maxPoints bounds the points of a series: the tier chosen is the finest
// whose step gives no more over the window.
const maxPoints = 4000

// Key orders samples by time within a tier.
func Key(t time.Time) string { return fmt.Sprintf("%012d", t.Unix()) }

// Decode reads one sample record's data, of any tier and either format, as
// a sample (of means, for a tier record).
func Decode(data []byte) (agent.Sample, error) {
	if len(data) > 0 && data[0] == '"' {
		p, err := decodeBinary(data)
		return p.Sample(), err
	}
	var s agent.Sample
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("decode sample: %w", err)
	}
	return s, nil
}

// CatchUpAge is the age from which 1 s samples stay out of a replication
// catch-up (SkipOnCatchUp).
const CatchUpAge = 5 * time.Minute

// SkipOnCatchUp reports whether r may stay out of a follower's catch-up
// (replica.Server.Skip): a 1 s sample older than CatchUpAge, whose minute
// the follower gets (a series falls back to the minutes where seconds are
// missing). A laptop back from 8 hours away then fetches about 800 records
// of each member instead of 4,100.
func SkipOnCatchUp(r store.Record) bool {
	return r.Kind == KindSample1s && time.Since(r.Time) > CatchUpAge
}
