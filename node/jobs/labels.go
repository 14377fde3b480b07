package jobs

// Labels the manager stores with every task (Task.Labels), so that a
// restarted agent re-finds its jobs (TaskStatus.Labels). An executor keeps
// them as its backend allows: container labels, a Slurm job's comment.
const (
	LabelJob      = "labpool.job"       // the job's ID
	LabelOwner    = "labpool.owner"     // device ID of who launched it
	LabelGPUs     = "labpool.gpus"      // comma-separated granted GPU UUIDs
	LabelSpecHash = "labpool.spec-hash" // hash of the job's spec
	LabelNode     = "labpool.node"      // device ID of the node that runs it
	LabelName     = "labpool.name"      // the job's name
	LabelProof    = "labpool.proof"     // the owner's proof (Job.OwnerProof)
	LabelSpec     = "labpool.spec"      // the spec as the proof signs it (SignedSpec), JSON
)

// What a job's network reaches besides the tunnels to it (Policy.JobNetwork).
// No job ever reaches another job, nor labpool's own ports on its host.
const (
	NetIsolated = "isolated" // nothing; only the tunnels reach the job
	NetOutside  = "outside"  // the LAN and the internet, never this host (the default)
	NetHost     = "host"     // also this host's other services (labpool's ports stay shut)
)

// NetworkModes are the values Policy.JobNetwork takes ("" is NetOutside).
var NetworkModes = []string{NetIsolated, NetOutside, NetHost}

// DefaultJobUser is the unprivileged host user jobs run as where the
// executor does not remap users: nobody.
const DefaultJobUser = "65534:65534"
