package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// slurmOutside is the owner, in the report, of the Slurm jobs labpool did
// not launch (by member: one row for them all).
const slurmOutside = "slurm"

// slurmGrants are the grants of the Slurm jobs that held node's GPUs (its
// SlurmHold records) and started before until: a job labpool launched
// through a cluster's agent counts under its labpool ID, name and owner
// (from the agent's record, read into *idx on first use; the owner only
// when the record proves it, else the job counts as "(unverified)"), one
// it did not
// under its Slurm name ("slurm job 123") and slurmOutside, as does one
// whose labpool job no cluster agent's record names (a compute node's
// word alone never charges a member).
func (r *Reader) slurmGrants(ctx context.Context, node string, until time.Time, idx *map[string]jobs.Job) ([]reportJob, error) {
	recs, err := r.db.Range(ctx, node, KindSlurmHold, time.Time{}, until.Add(24*time.Hour))
	if err != nil {
		return nil, fmt.Errorf("read the Slurm jobs of %s: %w", shortID(node), err)
	}
	var out []reportJob
	for _, rec := range recs {
		var h SlurmHold
		if json.Unmarshal(rec.Data, &h) != nil || h.Holder == "" || len(h.GPUs) == 0 || !h.Start.Before(until) {
			continue // malformed, or after the window
		}
		g := reportJob{ID: h.Holder, Name: h.Holder, Node: node, Owner: slurmOutside, GPUs: h.GPUs, Start: h.Start, Holder: h.Holder}
		if h.End != nil {
			g.End = *h.End
		}
		if h.Job != "" {
			j, err := r.slurmJob(ctx, idx, h.Job)
			if err != nil {
				return nil, err
			}
			if j.ID != "" { // else no cluster agent says so: the node's word alone names no member's job
				g.ID, g.Owner, g.Name = j.ID, j.Owner, fmt.Sprintf("%s (%s)", cmpOr(j.Name, shortID(j.ID)), h.Holder)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// heldOnNodes drops the grant a cluster agent's record makes of a Slurm job
// whose compute nodes reported what it held: theirs count, measured on
// their GPUs, never both.
func heldOnNodes(js []reportJob) []reportJob {
	seen := map[string]bool{}
	for _, j := range js {
		if j.Holder != "" {
			seen[j.ID] = true
		}
	}
	out := js[:0]
	for _, j := range js {
		if j.Holder != "" || !seen[j.ID] {
			out = append(out, j)
		}
	}
	return out
}
