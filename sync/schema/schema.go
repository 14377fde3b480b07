// Package schema is the replica's schema, in one place: every record kind
// the replica carries, with the one writer of its records and the size cap
// of each record, and every local setting key (never replicated) with the
// package that writes it.
//
// Every record is written by its origin only, about itself: a machine is
// the authority over its own node, samples, jobs, folders and alerts. The
// store refuses to append a record of a kind not listed here, or over its
// kind's caps; a member receiving a record refuses the same, and records
// of an origin past OriginQuota (see sync/store and sync/replica).
//
// It imports nothing of labpool, so that every package may ask it.
package schema

import (
	"errors"
	"fmt"
	"strings"
)

// Record kinds of the replica.
const (
	KindNode       = "node"        // key "": the machine's name, GPUs and capacity
	KindJob        = "job"         // key: job ID; a job the machine runs or ran
	KindFolder     = "folder"      // key: the share's name; a folder the machine shares
	KindAlert      = "alert"       // key: alert ID; one firing of a rule, and its clearing
	KindAlertRules = "alert.rules" // key "": the rules and mutes the machine evaluates
	KindLive       = "sample.live" // key "": the latest full sample, replaced every second
	KindSample1s   = "sample.1s"   // key: unix seconds; a point of 1 s
	KindSample1m   = "sample.1m"   // key: unix seconds of the minute; a point of 1 min
	KindSample15m  = "sample.15m"  // key: unix seconds; a point of 15 min
	KindSample3h   = "sample.3h"   // key: unix seconds; a point of 3 h
	KindEnergy     = "sample.energy"
	KindSlurmHold  = "slurm.hold" // key: "SLURMJOB@UNIXSTART"; a Slurm job that held the machine's GPUs
)

// HistoryPrefix starts the kind of every history record: the records a
// full disk drops (sync/store), every other kind being control.
const HistoryPrefix = "sample."

// IsHistory reports whether records of kind are history.
func IsHistory(kind string) bool { return strings.HasPrefix(kind, HistoryPrefix) }

// Kind is one record kind: who writes it and how large one record may be.
type Kind struct {
	Name   string
	Writer string // the package that writes this machine's records of it
	// MaxKey and MaxData cap one record: its key and its data, in bytes.
	MaxKey, MaxData int
}

// sampleKey caps the key of a history record (unix seconds, %012d).
const sampleKey = 20

// kinds lists every record kind.
var kinds = []Kind{
	{KindNode, "app/daemon (the machine's own record)", 0, 256 << 10},
	{KindJob, "app/nodestore (the jobs this machine runs)", 128, 64 << 10},
	{KindFolder, "app/sharing (the folders this machine shares)", 256, 16 << 10},
	{KindAlert, "app/alerting (the alerts this machine evaluates)", 256, 16 << 10},
	{KindAlertRules, "app/alerting (this machine's rules and mutes)", 0, 64 << 10},
	{KindLive, "app/history (this machine's latest sample)", 0, 512 << 10},
	{KindSample1s, "app/history (this machine's samples)", sampleKey, 64 << 10},
	{KindSample1m, "app/history (this machine's samples)", sampleKey, 64 << 10},
	{KindSample15m, "app/history (this machine's samples)", sampleKey, 64 << 10},
	{KindSample3h, "app/history (this machine's samples)", sampleKey, 64 << 10},
	{KindEnergy, "app (this machine's energy report)", sampleKey, 16 << 10},
	{KindSlurmHold, "app/daemon (the Slurm jobs on this compute node's GPUs)", 64, 4 << 10},
}

// Lookup returns kind name.
func Lookup(name string) (Kind, bool) {
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Kinds returns every record kind.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// MaxRecord is the largest record any kind allows (its key and data), so
// that a frame of the stream always holds one.
func MaxRecord() int {
	n := 0
	for _, k := range kinds {
		n = max(n, k.MaxKey+k.MaxData)
	}
	return n
}

// OriginQuota bounds the bytes (keys and data) a replica holds of one
// origin: a machine-year of history of 8 GPUs is about 50 MB.
const OriginQuota = 256 << 20

// ErrRefused means a record breaks the schema: its kind is unknown, it is
// over its kind's caps, or its origin is past OriginQuota.
var ErrRefused = errors.New("refused")

// Rules a record may break, as a refusal names them.
const (
	RuleKind  = "record kinds"
	RuleCap   = "record size cap"
	RuleQuota = "origin quota"
)

// Refusal is a record the schema refuses, and the rule it breaks.
type Refusal struct {
	Rule string // RuleKind, RuleCap or RuleQuota
	Msg  string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("refused: %s (rule: %s)", r.Msg, r.Rule)
}

// Is makes a Refusal match ErrRefused.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// Check refuses a record of kind with key and data of dataLen bytes that
// the schema does not allow.
func Check(kind, key string, dataLen int) error {
	k, ok := Lookup(kind)
	if !ok {
		return &Refusal{RuleKind, fmt.Sprintf("record kind %.64q is not in the replica's schema", kind)}
	}
	if len(key) > k.MaxKey {
		return &Refusal{RuleCap, fmt.Sprintf("key of a %s record is %d bytes, over its cap of %d", kind, len(key), k.MaxKey)}
	}
	if dataLen > k.MaxData {
		return &Refusal{RuleCap, fmt.Sprintf("%s record %.64q is %d bytes, over its cap of %d", kind, key, dataLen, k.MaxData)}
	}
	return nil
}

// Quota refuses a record of size bytes (key and data) of origin when the
// replica holds held bytes of it already, against a quota of limit bytes
// (OriginQuota but in tests).
func Quota(origin string, held, size, limit int64) error {
	if held+size <= limit {
		return nil
	}
	return &Refusal{RuleQuota, fmt.Sprintf("origin %.20s holds %d bytes in this replica; %d more is over its quota of %d", origin, held, size, limit)}
}
