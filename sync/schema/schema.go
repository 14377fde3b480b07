// Package schema is the replica's schema, in one place: every record kind
// the replica carries, with the one writer of its records and the size cap
// of each record and of the records of one origin, and every local setting
// key (never replicated) with the package that writes it.
//
// Every record is written by its origin only, about itself: a machine is
// the authority over its own node, samples, jobs, folders and alerts. The
// store refuses to append a record of a kind not listed here, over its
// kind's caps (MaxKey, MaxData, MaxRecords), carrying control characters
// in its text (CheckText), or past its origin's quotas (OriginQuota for
// every kind, ControlQuota for control kinds); a member receiving a record
// refuses the same (see sync/store and sync/replica).
//
// It imports nothing of labpool, so that every package may ask it.
package schema

import (
	"errors"
	"fmt"
	"slices"
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
	KindGrants     = "grants"     // key "": the machine's units and who holds them (alloc.Grant)
	// KindReservation: key: reservation ID; a reservation of the writing
	// machine's own GPUs (node/reserve.Reservation). A reader takes the
	// machine from the origin, and believes no GPU that is not the
	// origin's own.
	KindReservation = "reservation"
	KindLend        = "lend" // key "": whether the machine is lent to the pool now, and why not
)

// HistoryPrefix starts the kind of every history record: the records a
// full disk drops (sync/store), every other kind being control.
const HistoryPrefix = "sample."

// IsHistory reports whether records of kind are history.
func IsHistory(kind string) bool { return strings.HasPrefix(kind, HistoryPrefix) }

// Kind is one record kind: who writes it, how large one record may be and
// how many of them one origin may hold.
type Kind struct {
	Name   string
	Writer string // the package that writes this machine's records of it
	// MaxKey and MaxData cap one record: its key and its data, in bytes.
	MaxKey, MaxData int
	// MaxRecords caps the records of this kind that one origin holds in a
	// replica: a listing reads at most that many of each member.
	MaxRecords int
	// Multiline names the fields of the data whose text may carry line
	// breaks and tabs (messages, command lines); see CheckText.
	Multiline []string
}

// sampleKey caps the key of a history record (unix seconds, %012d).
const sampleKey = 20

// kinds lists every record kind. A history kind's MaxRecords is about
// twice the points its tier keeps (app/history); a control kind's bounds
// what a machine holds of it at once (a machine's writer prunes what ended).
var kinds = []Kind{
	{KindNode, "app (NodePublisher: the machine's own record)", 0, 256 << 10, 1, []string{"error", "reason", "message"}},
	{KindJob, "app/nodestore (the jobs this machine runs)", 128, 64 << 10, 1 << 17, []string{"cmd", "env", "error"}},
	{KindFolder, "app/sharing (the folders this machine shares)", 256, 16 << 10, 4096, nil},
	{KindAlert, "app/alerting (the alerts this machine evaluates)", 256, 16 << 10, 4096, []string{"message"}},
	{KindAlertRules, "app/alerting (this machine's rules and mutes)", 0, 64 << 10, 1, nil},
	{KindLive, "app/history (this machine's latest sample)", 0, 512 << 10, 1, []string{"error"}},
	{KindSample1s, "app/history (this machine's samples)", sampleKey, 64 << 10, 8192, []string{"error"}},
	{KindSample1m, "app/history (this machine's samples)", sampleKey, 64 << 10, 2 * 10080, []string{"error"}},
	{KindSample15m, "app/history (this machine's samples)", sampleKey, 64 << 10, 2 * 35136, []string{"error"}},
	{KindSample3h, "app/history (this machine's samples)", sampleKey, 64 << 10, 2 * 5856, []string{"error"}},
	{KindEnergy, "app (this machine's energy report)", sampleKey, 16 << 10, 2 * 17568, nil},
	{KindSlurmHold, "app (SlurmWatch: the Slurm jobs on this compute node's GPUs)", 64, 4 << 10, 16384, nil},
	{KindGrants, "app (GrantsPublisher: this machine's ledger, its units and grants)", 0, 256 << 10, 1, nil},
	{KindReservation, "app/daemon (node/reserve: the reservations of this machine's GPUs)", 32, 16 << 10, 2048, nil},
	{KindLend, "app/daemon (lend.go: this machine's lending, as its node/lend says)", 0, 4 << 10, 1, nil},
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

// ControlQuota bounds the bytes (keys and data) of control records a
// replica holds of one origin, inside OriginQuota: what a listing of
// active jobs, folders or alerts may have to read of one member (finding
// 9: `labpool ps` read 256 MiB of one member's jobs). Control records are
// those of every kind but history, less the records of ended jobs: those
// are the machine's history of use (reports read them), kept for good
// under OriginQuota and the job kind's count cap, and never read by a
// listing of active jobs. About 4,000 active jobs of 1 KiB fit.
const ControlQuota = 4 << 20

// ActiveJobStates are the states of a job that is not over: a job record
// whose "state" is one of them is a control record, listed by `ps`.
var ActiveJobStates = []string{"queued", "starting", "running"}

// IsControl reports whether a record of kind whose job state (the "state"
// its data names, for a job record; as the replica's index reads it) is
// state counts against ControlQuota.
func IsControl(kind, state string) bool {
	if IsHistory(kind) {
		return false
	}
	return kind != KindJob || slices.Contains(ActiveJobStates, state)
}

// ErrRefused means a record breaks the schema: its kind is unknown, it is
// over its kind's caps, it carries control characters in its text, or its
// origin is past a quota.
var ErrRefused = errors.New("refused")

// Rules a record may break, as a refusal names them.
const (
	RuleKind         = "record kinds"
	RuleCap          = "record size cap"
	RuleCount        = "record count cap"
	RuleQuota        = "origin quota"
	RuleControlQuota = "origin control quota"
	RuleText         = "no control characters in text"
)

// Refusal is a record the schema refuses, and the rule it breaks.
type Refusal struct {
	Rule string // one of the Rule constants
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

// Count refuses one more record of kind from origin when the replica holds
// held records of that kind of it already (the record it replaces, if any,
// not counted).
func Count(origin, kind string, held int64) error {
	k, ok := Lookup(kind)
	if !ok {
		return &Refusal{RuleKind, fmt.Sprintf("record kind %.64q is not in the replica's schema", kind)}
	}
	if held < int64(k.MaxRecords) {
		return nil
	}
	return &Refusal{RuleCount, fmt.Sprintf("origin %.20s holds %d %s records in this replica; one more is over their cap of %d", origin, held, kind, k.MaxRecords)}
}

// Control refuses a control record of size bytes (key and data) of origin
// when the replica holds held bytes of its control records already,
// against a quota of limit bytes (ControlQuota but in tests).
func Control(origin string, held, size, limit int64) error {
	if held+size <= limit {
		return nil
	}
	return &Refusal{RuleControlQuota, fmt.Sprintf("origin %.20s holds %d bytes of control records in this replica; %d more is over their quota of %d", origin, held, size, limit)}
}
