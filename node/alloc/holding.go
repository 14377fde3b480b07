package alloc

// Holding is who holds what one hardware reading of a machine shows. The
// reading (gpu.Stats) carries hardware only; the holding travels beside
// it (agent.Sample.Holding), filled by the machine's agent from its
// ledger's grants and, on a Slurm compute node, from the Slurm jobs its
// GPU processes run in.
type Holding struct {
	// GPUs is the holder of each GPU held now, by UUID: of several jobs
	// holding shares of one GPU, the first in ID order; a GPU a granted
	// MIG instance belongs to, by that instance's job.
	GPUs map[string]Holder `json:"gpus,omitempty"`
	// Procs is the holder of each GPU process, by PID: the labpool job
	// whose container it runs in, or the Slurm job it runs in. A process
	// absent runs outside labpool.
	Procs map[uint32]Holder `json:"procs,omitempty"`
}

// GPU returns the holder of the GPU with uuid; the zero Holder when free.
func (h Holding) GPU(uuid string) Holder { return h.GPUs[uuid] }

// Proc returns the holder of process pid; the zero Holder when it runs
// outside labpool.
func (h Holding) Proc(pid uint32) Holder { return h.Procs[pid] }

// Empty reports whether h names no holder.
func (h Holding) Empty() bool { return len(h.GPUs) == 0 && len(h.Procs) == 0 }

// HoldGPU records that o holds the GPU with uuid.
func (h *Holding) HoldGPU(uuid string, o Holder) {
	if h.GPUs == nil {
		h.GPUs = map[string]Holder{}
	}
	h.GPUs[uuid] = o
}

// HoldProc records that o holds process pid.
func (h *Holding) HoldProc(pid uint32, o Holder) {
	if h.Procs == nil {
		h.Procs = map[uint32]Holder{}
	}
	h.Procs[pid] = o
}

// Held reports whether h names anyone.
func (h Holder) Held() bool { return h.Kind != "" }

// JobID is the labpool job h is or runs: a job's ID, the labpool job a
// Slurm job runs; "" for any other holder.
func (h Holder) JobID() string {
	switch h.Kind {
	case Job:
		return h.ID
	case SlurmJob:
		return h.Job
	}
	return ""
}

// Scheduler names, for people, the scheduler's job h is ("slurm job
// 123"); "" when h is no Slurm job.
func (h Holder) Scheduler() string {
	if h.Kind == SlurmJob {
		return h.Name
	}
	return ""
}
