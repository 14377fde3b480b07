// Package jobs runs this node's jobs through an Executor (Docker containers
// on its GPUs, node/containers; batch jobs on a Slurm cluster, node/slurm):
// who may launch what, the GPU ledger and the queue where the executor does
// not schedule, the job records and their life cycle, and the http.Handler
// that members call to launch, stop, read logs and open tunnels.
package jobs

import (
	"time"

	"github.com/labpool/labpool/node/gpu"
)

// State is where a job is in its life.
type State string

// Job states.
const (
	Queued   State = "queued"
	Starting State = "starting"
	Running  State = "running"
	Exited   State = "exited" // ended with exit code 0, or stopped by a user
	Failed   State = "failed" // ended with a non-zero code, or could not start
	// Moved: a job queued here pool-wide and handed over to another
	// machine (Job.MovedTo), whose own record of it is the job's from then
	// on (see handover.go).
	Moved State = "moved"
)

// Spec is what a user asks for. It arrives from the network: the manager
// refuses what this machine's executor cannot run, and every option that
// could give a member root on the host, naming the rule, before any
// backend call. Its portable part is read by every executor; the options
// of a container engine are in ContainerSpec, embedded so that the wire
// format stays one flat object.
type Spec struct {
	Name           string   `json:"name,omitempty"`
	Image          string   `json:"image"` // "": a command job, where the executor runs commands
	Cmd            []string `json:"cmd,omitempty"`
	Env            []string `json:"env,omitempty"`               // K=V
	GPUs           int      `json:"gpus,omitempty"`              // any N free GPUs
	GPUIDs         []int    `json:"gpu_ids,omitempty"`           // these indexes
	MIGIDs         []string `json:"mig_ids,omitempty"`           // these MIG instances, by UUID ("MIG-...")
	MinGPUMemBytes uint64   `json:"min_gpu_mem_bytes,omitempty"` // per granted GPU, total memory
	// MIGProfile asks for GPUs MIG instances of this profile ("3g.40gb")
	// instead of whole GPUs, placed like GPUs.
	MIGProfile string `json:"mig_profile,omitempty"`
	// GPUShare, in (0, 1), asks for that fraction of one GPU instead of a
	// whole one (an MPS share where the machine runs MPS, a time-sliced
	// one otherwise); GPUMemBytes caps the share's GPU memory.
	GPUShare    float64 `json:"gpu_share,omitempty"`
	GPUMemBytes uint64  `json:"gpu_mem_bytes,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	Mounts      []Mount `json:"mounts,omitempty"`
	Ports       []int   `json:"ports,omitempty"` // ports of the job that tunnels reach (published nowhere on the node)
	Queue       bool    `json:"queue,omitempty"` // wait for busy GPUs instead of failing
	// Anywhere, with Queue, says that the owner queued the job pool-wide
	// (no --node): the machine it waits on (its home) may hand it over to
	// any machine of the pool that fits it first (handover.go). It is
	// signed, so no machine moves a job its owner pinned to one.
	Anywhere bool `json:"anywhere,omitempty"`
	// PrivateDigest binds the environment and the command line, which the
	// owner proof does not cover, to the signed spec of a job queued
	// pool-wide: PrivateDigest(PrivateSalt, Env, Cmd) in hex; "" when both
	// are empty. The machine a job is handed to checks it, so that the home
	// cannot change what runs. PrivateSalt stays with Env and Cmd: never
	// replicated, never signed.
	PrivateDigest string `json:"private_digest,omitempty"`
	PrivateSalt   string `json:"private_salt,omitempty"`

	// Where a backend schedules itself (a Slurm cluster, see Capabilities):
	// the partition ("" its default), the number of nodes and the GPUs on
	// each (instead of GPUs, when Nodes > 1), and the time limit.
	Partition        string `json:"partition,omitempty"`
	Nodes            int    `json:"nodes,omitempty"`
	GPUsPerNode      int    `json:"gpus_per_node,omitempty"`
	TimeLimitSeconds int64  `json:"time_limit_s,omitempty"`

	ContainerSpec
}

// ContainerSpec is what of a Spec only a container engine reads: the
// executor that runs Docker containers checks it (node/containers), and
// an executor that runs no Docker container refuses it whole.
type ContainerSpec struct {
	ShmBytes int64  `json:"shm_bytes,omitempty"`
	Restart  string `json:"restart,omitempty"` // "" | "no" | "on-failure"
	// User is who the job runs as: "" (the machine decides, see Policy),
	// "root", or a numeric uid[:gid]. Only where the engine remaps users or
	// the policy allows root may a job choose.
	User string `json:"user,omitempty"`

	// Dangerous options a client may send; every one is refused.
	Privileged  bool     `json:"privileged,omitempty"`
	NetworkMode string   `json:"network_mode,omitempty"` // only "" or "bridge"
	PidMode     string   `json:"pid_mode,omitempty"`
	IpcMode     string   `json:"ipc_mode,omitempty"`
	UTSMode     string   `json:"uts_mode,omitempty"`
	UsernsMode  string   `json:"userns_mode,omitempty"`
	CapAdd      []string `json:"cap_add,omitempty"`
	Devices     []string `json:"devices,omitempty"`
	SecurityOpt []string `json:"security_opt,omitempty"`
	Binds       []string `json:"binds,omitempty"`      // raw host binds: refused, use Mounts
	PortBinds   []string `json:"port_binds,omitempty"` // raw HOST:PORT binds: refused unless loopback
}

// IsZero says whether c asks for nothing.
func (c ContainerSpec) IsZero() bool {
	return c.ShmBytes == 0 && c.Restart == "" && c.User == "" && !c.Privileged && c.NetworkMode == "" &&
		c.PidMode == "" && c.IpcMode == "" && c.UTSMode == "" && c.UsernsMode == "" && len(c.CapAdd) == 0 &&
		len(c.Devices) == 0 && len(c.SecurityOpt) == 0 && len(c.Binds) == 0 && len(c.PortBinds) == 0
}

// Mount asks for a shared folder of the node inside the container.
type Mount struct {
	Folder    string `json:"folder"` // the shared folder's name on that node
	Target    string `json:"target"` // absolute path in the container
	ReadWrite bool   `json:"rw,omitempty"`
}

// Job is the record of one launch, kept by its node and replicated.
type Job struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Node  string `json:"node"`  // device ID of the node that runs it
	Owner string `json:"owner"` // device ID of who launched it
	Image string `json:"image"`
	// ImageLoadedBy is the device ID of the member who loaded the image
	// the job runs onto its machine, when that is not who launched it nor
	// the machine's own user: the name resolved to no registry's image.
	ImageLoadedBy string   `json:"image_loaded_by,omitempty"`
	Spec          Spec     `json:"spec"`
	State         State    `json:"state"`
	GPUs          []string `json:"gpus"`        // granted GPU UUIDs
	GPUIndexes    []int    `json:"gpu_indexes"` // and their indexes
	// GPUShare, in (0, 1), is the share of its GPU (GPUs[0]) the job was
	// granted, and GPUMemBytes that share's memory cap (0: none); 0: it
	// holds its GPUs whole. An MPS control daemon reads them.
	GPUShare    float64 `json:"gpu_share,omitempty"`
	GPUMemBytes uint64  `json:"gpu_mem_bytes,omitempty"`
	Container   string  `json:"container,omitempty"` // the executor's handle: a container ID, a Slurm job ID
	// Executor is the kind of executor that runs it ("" or "docker",
	// "slurm"); Hosts the nodes a cluster job runs on.
	Executor string   `json:"executor,omitempty"`
	Hosts    []string `json:"hosts,omitempty"`
	// Outcome says how an ended job ended when its exit code does not:
	// "cancelled", "timed_out", "oom", "node_fail".
	Outcome string `json:"outcome,omitempty"`
	// Restarts is how often the backend restarted the job's task on its
	// own (Spec.Restart "on-failure"); it never goes down.
	Restarts int         `json:"restarts,omitempty"`
	Ports    map[int]int `json:"ports,omitempty"` // the ports a tunnel reaches: container port -> port dialed at the container (published nowhere)
	Created  time.Time   `json:"created"`
	Started  *time.Time  `json:"started"`
	Finished *time.Time  `json:"finished"`
	ExitCode *int        `json:"exit_code"`
	Error    string      `json:"error,omitempty"` // why it failed or waits
	// ShareMode says how a job with a GPU share (Spec.GPUShare) shares its
	// GPU: ShareMPS, capped by an MPS control daemon, or ShareTimeSliced,
	// capped by nothing (see ShareNote).
	ShareMode  string  `json:"share_mode,omitempty"`
	GPUSeconds float64 `json:"gpu_seconds"` // GPU-time used so far
	SpecHash   string  `json:"spec_hash"`
	Removed    bool    `json:"removed,omitempty"` // its container was removed; the record stays
	// CmdWithheld says that Spec.Cmd was left out: only the job's owner,
	// admins, owners and the machine's own user read the command line.
	CmdWithheld bool `json:"cmd_withheld,omitempty"`
	// ReclaimAt is when the idle reclaim policy stops the job unless its
	// GPUs get busy again: the countdown its owner sees (nil: none).
	ReclaimAt *time.Time `json:"reclaim_at,omitempty"`
	// StopAt is when the machine stops the job, and StopWhy why: a
	// reservation of its GPUs for another member starts then (the notice
	// its owner sees ahead; nil: none).
	StopAt  *time.Time `json:"stop_at,omitempty"`
	StopWhy string     `json:"stop_why,omitempty"`
	// Lend says what the lend policy of a machine lent to the pool did to
	// this guest job: warned of when it yields, or paused (nil: nothing).
	Lend *LendNote `json:"lend,omitempty"`
	// OwnerProof is Owner's signature on the launch (Proof's wire form):
	// every reader checks it before it names Owner as the job's (see
	// VerifyOwner); "" on a record of an older node.
	OwnerProof string `json:"owner_proof,omitempty"`
	// Hand-over of a job queued pool-wide (handover.go). On its home:
	// Fence is the fence of its current or next offer, OfferedTo the
	// machine an offer is outstanding with (the job neither starts here
	// nor is offered elsewhere meanwhile), MovedTo where it went (State
	// Moved). On the machine it was handed to: Home is the machine that
	// queued it, whose ID the owner proof names, and Fence the offer's.
	Home      string `json:"home,omitempty"`
	Fence     uint64 `json:"fence,omitempty"`
	OfferedTo string `json:"offered_to,omitempty"`
	MovedTo   string `json:"moved_to,omitempty"`
}

// Stats is a job's resource use now.
type Stats struct {
	CPUPercent    float64    `json:"cpu_percent"`
	MemUsedBytes  uint64     `json:"mem_used_bytes"`
	MemLimitBytes uint64     `json:"mem_limit_bytes"`
	GPUs          []GPUStats `json:"gpus"`
}

// GPUStats is what a job's own processes use on one GPU.
type GPUStats struct {
	UUID  string `json:"uuid"`
	Index int    `json:"index"`
	// Host is the compute node the GPU is on, for a job of a backend that
	// places it elsewhere (a Slurm job's host); "": this machine.
	Host         string  `json:"host,omitempty"`
	UtilPercent  float64 `json:"util_percent"`
	MemUsedBytes uint64  `json:"mem_used_bytes"` // by the job's processes
	// Processes are the job's processes on the GPU (host PIDs), with their
	// memory.
	Processes []gpu.Process `json:"processes"`
}
