package app

import (
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// The jobs part of the local API:
//
//	GET    /api/v1/jobs?all=1                    -> []Job (replica: every node, also offline)
//	POST   /api/v1/jobs           LaunchRequest  -> Job
//	POST   /api/v1/jobs/plan      LaunchRequest  -> Plan (where it would run, each machine's GPUs)
//	GET    /api/v1/jobs/{id}                     -> Job
//	POST   /api/v1/jobs/{id}/stop                -> Job
//	DELETE /api/v1/jobs/{id}                     -> 204
//	GET    /api/v1/jobs/{id}/logs?follow=1&tail=N -> text/plain stream
//	GET    /api/v1/jobs/{id}/stats               -> jobs.Stats
//	POST   /api/v1/jobs/{id}/open  OpenRequest   -> Tunnel
//	GET    /api/v1/tunnels                       -> []Tunnel
//	GET    /api/v1/images?node=N                 -> []containers.Image
//	POST   /api/v1/images/load?node=N  (tar body) -> NDJSON of ImageProgress
//	POST   /api/v1/images/pull  PullRequest      -> NDJSON of ImageProgress
//
// Event EventJobs carries []Job whenever a job changes (coalesced).

// EventJobs is the event of a change to the jobs.
const EventJobs = "jobs:changed"

// Job is a job as the UI shows it: the node's record plus names.
type Job struct {
	jobs.Job
	NodeName string `json:"node_name"`
	// OwnerName names the member who launched the job when its record
	// proves it (OwnerVerified), else UnverifiedOwner: Owner is then empty,
	// ClaimedOwner holds what the job's node wrote, and the job is
	// accounted to no member.
	OwnerName     string `json:"owner_name"`
	OwnerVerified bool   `json:"owner_verified"`
	// OwnerUnverified names the rule the record's owner proof breaks.
	OwnerUnverified string `json:"owner_unverified,omitempty"`
	// ClaimedOwner is the owner an unverified record names (its node's
	// word, nobody's proof); empty when verified. A script that reads
	// Owner alone attributes nothing unproven.
	ClaimedOwner string `json:"claimed_owner,omitempty"`
	Stale        bool   `json:"stale"` // its node is offline: the state is last known
	// GPUWeight is how many GPUs the job counts as holding: 1 a whole GPU,
	// a share its fraction, a MIG instance its slices over its GPU's, a
	// cluster job the cluster's GPUs it asked (see weights.of). GPUSeconds
	// is then GPUWeight × its time held so far (to its end, or to now):
	// the node's own figure counts whole GPUs only, and none of a cluster's.
	GPUWeight float64 `json:"gpu_weight"`
	// ImageLoadedByName names the member who loaded the job's image onto
	// its machine (jobs.Job.ImageLoadedBy): the name the job ran resolved
	// to no registry's image but to one that member brought.
	ImageLoadedByName string `json:"image_loaded_by_name,omitempty"`
	// Placement, in Launch's answer only: why the plan picked its machine
	// and GPUs (Plan.Reason), e.g. "gpu1 has 8 free GPUs ...; avoided GPU 2
	// (throttled: hw_thermal_slowdown at 91 °C)".
	Placement string `json:"placement,omitempty"`
}

// LaunchRequest asks to run a job; Node (name or ID) is optional.
type LaunchRequest struct {
	Node string    `json:"node,omitempty"`
	Spec jobs.Spec `json:"spec"`
}

// Plan says where a launch would run and what each machine of the pool has
// for it. It is planned without an image too (the launch dialog asks before
// one is typed); Launch wants one.
type Plan struct {
	NodePlan            // the machine it would run on; Node is "" when none fits, and Reason says why
	Images   []string   `json:"images"` // image tags on that node
	Nodes    []NodePlan `json:"nodes"`  // every machine of the pool, as a launch there would find it
	// Suggestion, after a run of the same job on one whole GPU, is the
	// share its measured peak would fit (a suggestion: nothing changes
	// unless it is asked for).
	Suggestion *jobs.ShareSuggestion `json:"share_suggestion,omitempty"`
}

// NodePlan is what a launch would find on one machine: whether it fits, why
// (or why not), and each GPU's state.
type NodePlan struct {
	Node     string    `json:"node"`
	NodeName string    `json:"node_name"`
	Fits     bool      `json:"fits"`
	Reason   string    `json:"reason"` // why this node, or why it does not fit
	Free     int       `json:"free"`   // GPUs that no job and no process holds
	GPUs     []PlanGPU `json:"gpus"`   // in index order
	// Picked and Placement: for a count of GPUs that fits now, the GPUs
	// the machine would grant (jobs.Place, the rule it grants by) and why
	// those, e.g. "GPUs 0,1,3,4; every pair NVLinked (at least 18 links);
	// avoided GPU 2 (throttled: hw_thermal_slowdown at 91 °C)".
	Picked    []int  `json:"picked,omitempty"`
	Placement string `json:"placement,omitempty"`
	// Cluster is set where the machine is a Slurm cluster: what sbatch
	// will be asked, whether the partition can ever run the job and
	// whether it starts now or queues (Free then counts the partition's
	// GPUs on nodes that take jobs that no Slurm job holds, alloc.Free on
	// the cluster machine's grants record; GPUs is empty).
	Cluster *slurm.SubmitPlan `json:"cluster,omitempty"`
}

// The states of a GPU in a plan.
const (
	GPUFree  = "free"  // nothing holds it and it has the memory asked
	GPUSmall = "small" // nothing holds it, but it has less memory than asked
	GPUHeld  = "held"  // a labpool job holds it (Job, JobName, Owner, OwnerName say which)
	GPUBusy  = "busy"  // a process outside labpool uses it
	// GPUFaulty: quarantined or lost (Reason says why); granted to no job.
	GPUFaulty = "faulty"
)

// PlanGPU is one GPU of a machine as a launch would find it. A job that
// holds it is named as every member may see it (issue 9: that it exists,
// its name and owner; never its environment).
type PlanGPU struct {
	Index         int     `json:"index"`
	UUID          string  `json:"uuid"`
	Name          string  `json:"name"`
	MemTotalBytes uint64  `json:"mem_total_bytes"`
	MemUsedBytes  uint64  `json:"mem_used_bytes"`
	MemUnified    bool    `json:"mem_unified,omitempty"` // the system's memory (see GPU.MemUnified)
	UtilPercent   float64 `json:"util_percent"`
	State         string  `json:"state"`                // GPUFree, GPUSmall, GPUHeld or GPUBusy
	Job           string  `json:"job,omitempty"`        // the holding job's ID
	JobName       string  `json:"job_name,omitempty"`   // and name
	Owner         string  `json:"owner,omitempty"`      // device ID of who launched it
	OwnerName     string  `json:"owner_name,omitempty"` // and that member's name
	Reason        string  `json:"reason,omitempty"`     // why a faulty or MIG GPU is kept out, e.g. "quarantined: XID 79 (...)"
	// Status is the GPU's line for people, as the UI shows it: "free",
	// "train · mike", "under 40.0 GiB", or why it is kept out.
	Status string `json:"status"`
}

// OpenRequest asks for a tunnel to a job's container port.
type OpenRequest struct {
	Port int `json:"port"`
}

// Tunnel is a local listener forwarding to a job's container port.
type Tunnel struct {
	Job  string `json:"job"`
	Port int    `json:"port"`
	URL  string `json:"url"` // http://127.0.0.1:LOCAL/
}

// PullRequest asks a node to pull an image from a registry it can reach.
type PullRequest struct {
	Node  string `json:"node"`
	Ref   string `json:"ref"`
	Force bool   `json:"force,omitempty"` // replace a local image of that tag (the machine's owner only)
}

// ImageProgress is one line of an image load or pull.
type ImageProgress struct {
	Done   int64    `json:"done"`
	Total  int64    `json:"total"`
	Status string   `json:"status,omitempty"`
	Error  string   `json:"error,omitempty"`
	Tags   []string `json:"tags,omitempty"` // on the last line of a load
}
