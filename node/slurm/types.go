// Package slurm runs labpool's jobs on a Slurm cluster through Slurm's own
// commands (sbatch, squeue, sinfo, scontrol, scancel), as an executor of
// node/jobs, and reads the cluster for its card: partitions, nodes, GPUs
// and the queue.
//
// Who runs what. No job runs as the agent's Unix user: each runs as its
// account (Config.JobUser, or the member's own through Config.UserFor),
// which the agent becomes for sbatch, scancel and job steps (AsRunner:
// setpriv as root, sudo -n otherwise). New refuses an account that is
// root or the agent's user, or that may reach the agent's state or data
// (ErrJobAccount, naming the rule). The member who launched a job is in
// its Slurm comment ("labpool:job=ID,owner=DEVICE") for people to read;
// what makes a job labpool's is the executor's record of it (its state
// directory, closed to job accounts), run by the account it was
// submitted as: a comment is anyone's to write.
//
// What a job gets. sbatch reads the script on its standard input, and
// the job's environment from sbatch's own (--export names it): the
// user's login environment, labpool's LABPOOL_JOB and LABPOOL_OWNER, and
// the task's Env, which may not set SLURM_*, SBATCH_*, SALLOC_*,
// SRUN_*, LABPOOL_* or the GPU variables Slurm grants. No value is in a
// file or a command line; every word of the command is single-quoted in
// the script and every sbatch option is an argv entry, so nothing
// reaches a shell as code. An image runs through pyxis (srun
// --container-image, folders as --container-mounts) or Apptainer (exec
// --nv, folders as --bind); a cluster with neither refuses image jobs
// (ErrNoContainerRuntime). A command job runs on the node with its
// account's file access, so its folders are not mounted but named:
// LABPOOL_FOLDER_<NAME>=<host path>, NAME from the target's last element;
// read-only is not enforced for a command job.
//
// Where things are. Config.StateDir holds a record per job. A job runs
// in its account's home and writes its output there
// (~/.labpool-slurm/slurm-ID.out, sbatch --output), which Logs opens
// without following links and only as a regular file of the account.
//
// What Slurm forgets. Without accounting (accounting_storage/none, no
// sacct) Slurm drops an ended job MinJobAge (300 s) after its end. The
// executor keeps each job's last status in its record and, for a job
// that left squeue unseen, asks scontrol while it still knows it. A job
// that ended while no agent watched, and that both have forgotten, reads
// as failed with its exit unknown (ExitCode -1). Stats report only what
// the job asked (its memory limit): sstat needs accounting.
//
// Cost. One squeue per tick serves Inspect, List, Events, Logs and Stop:
// the jobs of the job accounts (--user: slurmctld filters, so a
// queue full of other users' jobs costs little); ReadCluster reads every
// job, and that read serves the tick's other readers too. That squeue
// prints each job's state line alone (ID, state, reason; see
// statelines.go): a job whose line did not change keeps the fields read
// before, unparsed, and only the jobs that are new or changed state are
// read in full, by a second squeue that names them. Full records are
// text with per-call random markers around the free fields (see
// squeueTextArgs): 14 to 18 times cheaper than squeue --json, and safe
// against names that hold newlines. Commands write to memory files and
// are awaited in the runtime's poller (spawn_linux.go). A tick whose
// queue and records did not change lists nothing; while no labpool job
// is pending or running, Events reads every IdleTick instead of every
// Tick. With 1,000 labpool jobs a tick whose queue did not change costs
// 7 to 9 ms of CPU, squeue's included (BenchmarkPoll1000Real, less the
// test's nsenter), where reading every job in full cost 17 to 19.
package slurm

import "time"

// Cluster is what the cluster's agent publishes about it (in its node
// record), read once per tick from sinfo and squeue.
type Cluster struct {
	Name       string      `json:"name"`    // ClusterName
	Version    string      `json:"version"` // Slurm's version
	Partitions []Partition `json:"partitions"`
	Nodes      []Node      `json:"nodes"`
	GPUs       []GPUCount  `json:"gpus"`  // by type, over every node
	Queue      []QueueJob  `json:"queue"` // running and pending, at most QueueCap, labpool's first
	Running    int         `json:"running"`
	Pending    int         `json:"pending"`
	// Containers says how images run here: "pyxis", "apptainer"; empty:
	// command jobs only.
	Containers []string  `json:"containers,omitempty"`
	Read       time.Time `json:"read"`            // when these figures were read; a later read that changes nothing keeps it (Card.set)
	Error      string    `json:"error,omitempty"` // why the last read failed (the figures are the last good ones)
}

// QueueCap is the most queue entries a Cluster carries.
const QueueCap = 200

// Partition is one Slurm partition.
type Partition struct {
	Name         string     `json:"name"`
	Default      bool       `json:"default,omitempty"`
	State        string     `json:"state"` // up, down, drain, inactive
	Nodes        []string   `json:"nodes"`
	MaxTimeS     int64      `json:"max_time_s,omitempty"` // 0: unlimited
	DefaultTimeS int64      `json:"default_time_s,omitempty"`
	CPUs         int        `json:"cpus"`
	GPUs         []GPUCount `json:"gpus"`
}

// Node is one compute node.
type Node struct {
	Name       string     `json:"name"`
	State      string     `json:"state"` // idle, mixed, allocated, down, drain...
	Reason     string     `json:"reason,omitempty"`
	Partitions []string   `json:"partitions"`
	Addr       string     `json:"addr,omitempty"` // NodeAddr
	CPUs       int        `json:"cpus"`
	CPUsAlloc  int        `json:"cpus_alloc"`
	MemoryMB   int64      `json:"memory_mb"`
	MemAllocMB int64      `json:"mem_alloc_mb"`
	GPUs       []GPUCount `json:"gpus"`
}

// GPUCount is how many GPUs of one type there are, and how many are
// allocated.
type GPUCount struct {
	Type  string `json:"type"` // the GRES type ("a100", "fake"); "" untyped
	Total int    `json:"total"`
	Alloc int    `json:"alloc"`
}

// Free is the GPUs not allocated.
func (g GPUCount) Free() int { return max(0, g.Total-g.Alloc) }

// QueueJob is one job in Slurm's queue.
type QueueJob struct {
	ID        string    `json:"id"` // Slurm's job ID
	Name      string    `json:"name"`
	User      string    `json:"user"`
	State     string    `json:"state"`            // Slurm's state: PENDING, RUNNING...
	Reason    string    `json:"reason,omitempty"` // why it is pending
	Partition string    `json:"partition"`
	Nodes     []string  `json:"nodes,omitempty"`
	GPUs      int       `json:"gpus"`
	Submitted time.Time `json:"submitted"`
	Started   time.Time `json:"started,omitempty"`
	// LabpoolJob and Owner are set for jobs labpool submitted (its job ID
	// and the member who launched it, from the job's comment).
	LabpoolJob string `json:"labpool_job,omitempty"`
	Owner      string `json:"owner,omitempty"`
}
