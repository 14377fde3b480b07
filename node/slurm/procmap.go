package slurm

import (
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// JobFinder finds the labpool job record of Slurm job slurmID of cluster
// (lower case): the job's ID and its owner (member ID). ok is false for a
// Slurm job labpool did not launch, or whose record has not arrived.
type JobFinder func(cluster, slurmID string) (job, owner string, ok bool)

// HolderName is how a GPU held by Slurm job id reads for people.
func HolderName(id string) string { return "slurm job " + id }

// Annotate names in held the Slurm jobs the GPU processes of a compute
// node run in, after the job manager named its own containers' (a process
// it named keeps its job): each such process is held by its Slurm job,
// which names, when labpool launched it through a cluster's agent, the
// labpool job and its owner, found by find; a GPU that the node's own
// ledger does not hold is held by it too. A job of an unknown cluster is
// never taken for a labpool job (rule "slurm job of a known cluster"):
// Slurm job IDs repeat across clusters. Call it once per sample: it
// forgets the processes gone since the last call.
func (p *Procs) Annotate(gs []gpu.Stats, held *alloc.Holding, find JobFinder) {
	defer p.Sweep()
	for _, g := range gs {
		for _, pr := range g.Processes {
			h := held.Proc(pr.PID)
			switch h.Kind {
			case alloc.SlurmJob: // named on another GPU it uses too
			case "":
				var ok bool
				if h, ok = p.holderOf(pr.PID, find); !ok {
					continue
				}
				held.HoldProc(pr.PID, h)
			default:
				continue // in a container of this machine's jobs
			}
			if !held.GPU(g.UUID).Held() {
				held.HoldGPU(g.UUID, h)
			}
		}
	}
}

// holderOf is the Slurm job process pid runs in, naming labpool's job and
// its owner where find knows them; ok is false outside any Slurm job.
func (p *Procs) holderOf(pid uint32, find JobFinder) (alloc.Holder, bool) {
	cluster, id, ok := p.JobOf(int(pid))
	if !ok {
		return alloc.Holder{}, false
	}
	h := alloc.Holder{Kind: alloc.SlurmJob, ID: id, Name: HolderName(id)}
	if cluster != "" {
		if job, owner, ok := find(cluster, id); ok {
			h.Job, h.Member = job, owner
		}
	}
	return h, true
}
