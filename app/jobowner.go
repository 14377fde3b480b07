package app

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// UnverifiedOwner is the owner's name shown for a job whose record does
// not prove who launched it (Job.OwnerVerified false): its node wrote the
// owner, and a node may write any.
const UnverifiedOwner = "(unverified)"

// RuleOwnerNotMember is broken by a job whose proof is the signature of a
// device the pool never admitted. A member removed since stays the owner
// of the jobs their device signed, named "NAME (removed)": only their own
// key makes such a proof, and a job they launched keeps its history.
const RuleOwnerNotMember = "owner proof: not a member"

// maxOwnerChecks bounds the cache of checked records; past it the cache
// starts anew.
const maxOwnerChecks = 1 << 16

// ownerChecks caches the signature checks of job records by record: a
// record (its origin and sequence number) never changes, and checking an
// Ed25519 signature costs more than reading the record.
type ownerChecks struct {
	mu    sync.Mutex
	rules map[recordKey]string // the rule the record's proof breaks; "" when none
}

type recordKey struct {
	origin string
	seq    uint64
}

// proofRule is the rule j's owner proof breaks ("" when none), j read from
// rec: the proof must be of j.Owner, for j (the job's ID, its node, which
// is its origin, and its spec); members names the devices the pool has
// admitted (memberNames), of whom j.Owner must be one (not cached:
// members come).
func (r *Reader) proofRule(rec store.Record, j jobs.Job, members map[string]string) string {
	rule := r.owners.rule(rec, j, members)
	if rule == "" && j.Home != "" && j.Home != rec.Origin {
		rule = r.handedRule(rec.Origin, j)
	}
	return rule
}

// RuleNotHanded is broken by the record of a job handed over (jobs.Job.Home)
// whose home's own record does not say it offered or handed the job to the
// record's origin: the owner proof is the home's to use, and a machine
// that copied it from the home's record proves nothing.
const RuleNotHanded = "handover: its home did not hand it over"

// handedRule is RuleNotHanded when the record of job j by origin, handed
// over from j.Home, is not backed by the home's record: it offered the job
// to origin (an answer on its way) or moved it there. Read from the local
// replica, never cached: the home's record may come after origin's.
func (r *Reader) handedRule(origin string, j jobs.Job) string {
	rec, ok, err := r.db.Latest(context.Background(), j.Home, KindJob, j.ID)
	if err != nil || !ok {
		return RuleNotHanded
	}
	var h jobs.Job
	if json.Unmarshal(rec.Data, &h) != nil || h.ID != j.ID || (h.MovedTo != origin && h.OfferedTo != origin) {
		return RuleNotHanded
	}
	return ""
}

// rule is Reader.proofRule with c's cache of signature checks.
func (c *ownerChecks) rule(rec store.Record, j jobs.Job, members map[string]string) string {
	j.Node = rec.Origin
	k := recordKey{rec.Origin, rec.Seq}
	c.mu.Lock()
	rule, ok := c.rules[k]
	c.mu.Unlock()
	if !ok {
		rule = ruleOf(j.VerifyOwner())
		c.mu.Lock()
		if c.rules == nil || len(c.rules) >= maxOwnerChecks {
			c.rules = map[recordKey]string{}
		}
		c.rules[k] = rule
		c.mu.Unlock()
	}
	if _, member := members[j.Owner]; rule == "" && !member {
		rule = RuleOwnerNotMember
	}
	return rule
}

// ruleOf is the rule err names.
func ruleOf(err error) string {
	var pe *jobs.ProofError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return pe.Rule
	}
	return err.Error()
}

// attribute sets j's owner as proven or not: OwnerVerified, the rule
// broken (OwnerUnverified), and Owner and OwnerName, which name a member
// only when the record proves the job is theirs; otherwise the record's
// owner moves to ClaimedOwner.
func (j *Job) attribute(rule string, names map[string]string) {
	j.OwnerVerified, j.OwnerUnverified = rule == "", rule
	if j.OwnerVerified {
		j.OwnerName, j.ClaimedOwner = ownerName(names, j.Owner), ""
		return
	}
	j.OwnerName, j.ClaimedOwner, j.Owner = UnverifiedOwner, j.Owner, ""
}

// verifiedOwner is j's owner when rule is "", else "": whom a job is
// accounted to.
func verifiedOwner(j jobs.Job, rule string) string {
	if rule != "" {
		return ""
	}
	return j.Owner
}
