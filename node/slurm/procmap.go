package slurm

import "github.com/labpool/labpool/node/gpu"

// JobFinder finds the labpool job record of Slurm job slurmID of cluster
// (lower case): the job's ID and its owner (member ID). ok is false for a
// Slurm job labpool did not launch, or whose record has not arrived.
type JobFinder func(cluster, slurmID string) (job, owner string, ok bool)

// HolderName is how a GPU held by Slurm job id reads for people.
func HolderName(id string) string { return "slurm job " + id }

// Annotate maps the GPU processes of a compute node that run in Slurm jobs
// to their jobs, after the job manager mapped its own containers' (a
// process it named keeps its job): each such process names its Slurm job
// (Holder) and, when labpool launched that job through a cluster's agent,
// the labpool job and its owner, found by find; a GPU that the node's own
// ledger does not hold names them too. A job of an unknown cluster is never
// taken for a labpool job (rule "slurm job of a known cluster"): Slurm job
// IDs repeat across clusters. Call it once per sample: it forgets the
// processes gone since the last call.
func (p *Procs) Annotate(gs []gpu.Stats, find JobFinder) {
	defer p.Sweep()
	for i := range gs {
		g := &gs[i]
		for k := range g.Processes {
			pr := &g.Processes[k]
			if pr.Job != "" {
				continue // in a container of this machine's jobs
			}
			cluster, id, ok := p.JobOf(int(pr.PID))
			if !ok {
				continue
			}
			pr.Holder = HolderName(id)
			if cluster != "" {
				if job, owner, ok := find(cluster, id); ok {
					pr.Job, pr.Owner = job, owner
				}
			}
			if g.Job == "" && g.Holder == "" {
				g.Job, g.Holder = pr.Job, pr.Holder
			}
		}
	}
}
