package app

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/labpool/labpool/node/jobs"
)

// nameJobs gives each GPU that a job holds that job's name and its owner's
// member name, read from the job's record in the replica: a person reads
// names, the IDs stay beside them for scripts.
func (r *Reader) nameJobs(ctx context.Context, nodes []Node) error {
	var (
		slurmIdx map[string]jobs.Job // the cluster agents' Slurm jobs, read once when a GPU needs them
		err      error
	)
	names, err := r.peopleNames(ctx, nodes) // owners: those removed since keep their name
	if err != nil {
		return err
	}
	for ni := range nodes {
		n := &nodes[ni]
		seen := map[string]jobs.Job{}
		for gi := range n.GPUs {
			g := &n.GPUs[gi]
			if g.Job == "" {
				continue
			}
			j, ok := seen[g.Job]
			var rule string
			if !ok && g.Holder != "" {
				if j, err = r.slurmJob(ctx, &slurmIdx, g.Job); err != nil {
					return err
				}
				seen[g.Job] = j
			} else if !ok {
				rec, found, err := r.db.Latest(ctx, n.ID, KindJob, g.Job)
				if err != nil {
					return fmt.Errorf("read job %s of %s: %w", g.Job, n.Name, err)
				}
				if !found || json.Unmarshal(rec.Data, &j) != nil || j.ID != g.Job {
					j = jobs.Job{}
				} else if rule = r.proofRule(rec, j, names); rule != "" {
					j.Owner = "" // its record proves no member launched it
				}
				seen[g.Job] = j
			}
			if j.ID == "" {
				continue // not replicated yet: the ID is all there is
			}
			g.JobName, g.JobOwner, g.JobOwnerName = j.Name, j.Owner, ownerName(names, j.Owner)
			if j.Owner == "" {
				g.JobOwnerName = UnverifiedOwner
			}
		}
	}
	return r.nameClusterJobs(ctx, nodes, names)
}

// slurmJob is the record of job id that a cluster's agent launched through
// Slurm and a compute node's GPU names (its sample's holding), reading the
// cluster agents' jobs into *idx on first use; an empty Job when none.
func (r *Reader) slurmJob(ctx context.Context, idx *map[string]jobs.Job, id string) (jobs.Job, error) {
	if *idx == nil {
		_, byID, err := readSlurmJobs(ctx, r.db, &r.owners)
		if err != nil {
			return jobs.Job{}, fmt.Errorf("read the Slurm jobs of cluster agents: %w", err)
		}
		*idx = byID
	}
	return (*idx)[id], nil
}
