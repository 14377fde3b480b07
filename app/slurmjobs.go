package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// SlurmJobs finds in the replica the job records of the Slurm jobs that
// labpool launched through a cluster's agent: by the cluster's name and
// Slurm's job ID, for a compute node whose GPU processes run in them
// (slurm.Procs.Annotate), and by labpool's job ID, for the names people
// read. It answers from memory, reading the replica again at most every
// MissEvery on a miss and every ReadEvery in any case.
//
// A cluster's jobs are those its agent's records say: a record counts
// only from the machine whose node record stands for the cluster
// (NodeRecord.Cluster) and names itself as the job's node. Two machines
// standing for one cluster name are both ignored (rule "one agent per
// cluster"): neither may pass Slurm's jobs off as its own. A record names
// its owner only when it proves it, as any job record (Job.VerifyOwner, a
// member's signature on the launch): else the job is the agent's word and
// its owner is "" (see Reader.proofRule).
type SlurmJobs struct {
	db     *store.DB
	now    func() time.Time
	owners ownerChecks

	mu      sync.Mutex // guards the fields below
	bySlurm map[slurmKey]jobs.Job
	byID    map[string]jobs.Job
	read    time.Time // when the replica was last read; zero: never
}

type slurmKey struct{ cluster, id string }

// How often SlurmJobs reads the replica again.
const (
	slurmJobsReadEvery = 30 * time.Second
	slurmJobsMissEvery = 5 * time.Second
)

// NewSlurmJobs returns the index of the Slurm jobs in db.
func NewSlurmJobs(db *store.DB) *SlurmJobs {
	return &SlurmJobs{db: db, now: time.Now}
}

// Find implements slurm.JobFinder: the labpool job that is Slurm job id of
// cluster, and its owner ("" when its record does not prove one).
func (x *SlurmJobs) Find(cluster, id string) (job, owner string, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := slurmKey{strings.ToLower(cluster), id}
	j, ok := x.bySlurm[k]
	if x.staleLocked(ok) {
		x.readLocked()
		j, ok = x.bySlurm[k]
	}
	return j.ID, j.Owner, ok
}

// Job returns the record of the labpool job id, when it is a Slurm job; its
// Owner is "" when the record does not prove one.
func (x *SlurmJobs) Job(id string) (jobs.Job, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	j, ok := x.byID[id]
	if x.staleLocked(ok) {
		x.readLocked()
		j, ok = x.byID[id]
	}
	return j, ok
}

var _ slurm.JobFinder = (*SlurmJobs)(nil).Find

// staleLocked says whether to read the replica again, after a hit or not.
func (x *SlurmJobs) staleLocked(hit bool) bool {
	age := x.now().Sub(x.read)
	return x.read.IsZero() || age >= slurmJobsReadEvery || (!hit && age >= slurmJobsMissEvery)
}

// readLocked reads the cluster agents' job records; on an error the last
// index stays and the next read is tried after MissEvery.
func (x *SlurmJobs) readLocked() {
	x.read = x.now()
	bySlurm, byID, err := readSlurmJobs(context.Background(), x.db, &x.owners)
	if err != nil {
		return
	}
	x.bySlurm, x.byID = bySlurm, byID
}

// readSlurmJobs indexes the Slurm jobs of every cluster agent in db; a
// record that does not prove its owner a member (checked through owners)
// is indexed with Owner "".
func readSlurmJobs(ctx context.Context, db *store.DB, owners *ownerChecks) (map[slurmKey]jobs.Job, map[string]jobs.Job, error) {
	agents, err := clusterAgents(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	members, err := memberNames(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	bySlurm, byID := map[slurmKey]jobs.Job{}, map[string]jobs.Job{}
	for node, cluster := range agents {
		recs, err := db.Range(ctx, node, KindJob, time.Time{}, time.Now().Add(24*time.Hour))
		if err != nil {
			return nil, nil, fmt.Errorf("read jobs of %s: %w", shortID(node), err)
		}
		for _, rec := range recs {
			var j jobs.Job
			if json.Unmarshal(rec.Data, &j) != nil || j.ID == "" || j.Node != node || j.Executor != "slurm" || j.Container == "" {
				continue
			}
			if owners.rule(rec, j, members) != "" {
				j.Owner = "" // the agent's word alone names no member
			}
			k := slurmKey{cluster, j.Container}
			if old, ok := bySlurm[k]; !ok || j.Created.After(old.Created) {
				bySlurm[k] = j
			}
			byID[j.ID] = j
		}
	}
	return bySlurm, byID, nil
}

// clusterAgents returns the machines standing for a Slurm cluster (node ID
// -> the cluster's name, lower case), leaving out every cluster name that
// two machines claim.
func clusterAgents(ctx context.Context, db *store.DB) (map[string]string, error) {
	claims, err := nodeClaims(ctx, db, func(nr NodeRecord) string {
		if nr.Cluster == nil {
			return ""
		}
		return strings.ToLower(nr.Cluster.Name)
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, nodes := range claims {
		if len(nodes) == 1 { // rule "one agent per cluster"
			out[nodes[0]] = name
		}
	}
	return out, nil
}
