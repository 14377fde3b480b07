package jobs

import (
	"context"
	"errors"
	"io"
	"time"
)

// Executor runs the manager's tasks on one backend: Docker containers on
// this machine (node/containers) or batch jobs on a Slurm cluster
// (node/slurm). It is shaped like Nomad's task driver: the manager decides
// who may run what and where (policy, validation, the GPU ledger when the
// backend does not schedule), the executor only starts, stops, removes,
// reports and re-finds tasks. Every call names a task by the handle Start
// returned (a container ID, a Slurm job ID). An executor touches only the
// tasks it started for labpool (labelled, or named in its comment).
type Executor interface {
	// Capabilities says what this executor can do; the manager branches
	// on it, never on the executor's kind.
	Capabilities() Capabilities
	// Start launches t and returns its status once the backend holds it
	// (a running container, a submitted Slurm job, maybe still pending).
	// A start that fails leaves nothing behind.
	Start(ctx context.Context, t Task) (TaskStatus, error)
	// Stop ends the task: SIGTERM, then SIGKILL after grace (Docker), or
	// scancel (Slurm). Stopping an ended task is not an error.
	Stop(ctx context.Context, handle string, grace time.Duration) error
	// Remove forgets an ended task on the backend (its container, its
	// output file). A task that is already gone is not an error.
	Remove(ctx context.Context, handle string) error
	// Inspect reads one task; an error for which IsTaskGone is true means
	// the backend no longer knows it.
	Inspect(ctx context.Context, handle string) (TaskStatus, error)
	// List returns every task this executor holds for labpool, running or
	// ended, so that an agent restarted adopts them without starting them
	// again. It reads the whole backend once (one squeue, one container
	// list), never once per task.
	List(ctx context.Context) ([]TaskStatus, error)
	// Events streams changes of the tasks' states until ctx ends or the
	// stream breaks (the error channel then says why). A backend without
	// native events polls once per tick and sends what changed.
	Events(ctx context.Context) (<-chan TaskEvent, <-chan error)
	// Logs reads the task's output: the last tail lines (tail <= 0: all),
	// then, when follow is set, what it writes until it ends or ctx ends.
	Logs(ctx context.Context, handle string, follow bool, tail int) (io.ReadCloser, error)
	// Stats reads the task's resource use now.
	Stats(ctx context.Context, handle string) (TaskUsage, error)
}

// PortHolder is an executor whose tasks share their host with other tasks
// and services (a Slurm node, where every job runs as the agent's user):
// there a declared port proves nothing, and the manager asks HoldsPort
// before a tunnel dials it. HoldsPort answers nil when a process of the
// task listens on port where its tunnels dial, an error naming the rule
// otherwise.
type PortHolder interface {
	HoldsPort(ctx context.Context, handle string, port int) error
}

// Capabilities is what an executor can do.
type Capabilities struct {
	// Name is the executor's kind, shown to people and recorded in each
	// job ("docker", "slurm").
	Name string `json:"name"`
	// Schedules says that the backend queues tasks and places them on its
	// own GPUs (Slurm): the manager then keeps no GPU ledger and no queue
	// of its own for it, and submits at once.
	Schedules bool `json:"schedules,omitempty"`
	// Images lists how it runs an image: "docker", "pyxis", "apptainer".
	// Empty: it runs commands only.
	Images []string `json:"images,omitempty"`
	// Commands says that it runs a command without an image.
	Commands bool `json:"commands,omitempty"`
	// MultiNode says that one task may span several nodes.
	MultiNode bool `json:"multi_node,omitempty"`
	// RemapsUsers says that root in a task is not root on the host.
	RemapsUsers bool `json:"remaps_users,omitempty"`
	// Restart says that it restarts a failed task on its own
	// (Spec.Restart "on-failure").
	Restart bool `json:"restart,omitempty"`
	// MPS says that it caps a task's GPU share with MPS (threads and
	// memory); false, a share is time-sliced and uncapped.
	MPS bool `json:"mps,omitempty"`
}

// Task is what an executor is asked to run: the portable part of a job,
// already validated, with its grants and folders resolved.
type Task struct {
	ID    string // the job's ID
	Name  string // the job's name
	Owner string // device ID of the member who launched it
	Image string // "" for a command job
	Cmd   []string
	Env   []string // K=V
	// GPUs are the UUIDs granted by the ledger (executors that do not
	// schedule); a scheduling executor asks for Resources instead.
	GPUs []string
	// GPUShare, in (0, 1), is the fraction of its one GPU the task holds
	// (0: whole GPUs); GPUMemBytes caps that share's GPU memory (0: no cap).
	GPUShare    float64
	GPUMemBytes uint64
	Resources   Resources
	Mounts      []TaskMount
	Ports       []int             // ports of the task that tunnels reach (published nowhere)
	Labels      map[string]string // labpool.* labels the executor stores with the task
	// Container holds the options only a container executor reads.
	Container ContainerOptions
}

// Resources is what a task asks of a backend that schedules.
type Resources struct {
	CPUs        float64       // per task (per node for a multi-node job); 0: the backend's default
	MemoryBytes int64         // per node; 0: the backend's default
	GPUs        int           // in all, on one node (Nodes <= 1)
	Nodes       int           // 0 or 1: one node
	GPUsPerNode int           // with Nodes > 1
	TimeLimit   time.Duration // 0: the partition's default
	Partition   string        // "": the cluster's default
}

// TaskMount is a folder of the host (resolved, checked) inside the task.
type TaskMount struct {
	HostPath string
	Target   string
	ReadOnly bool
}

// ContainerOptions are the options of a container executor: who the task
// runs as, its shared memory, its restart policy, its network.
type ContainerOptions struct {
	User        string // "uid:gid"; "" the executor's default
	AllowRoot   bool   // the machine's policy lets root run as root
	ShmBytes    int64
	Restart     string // "" | "no" | "on-failure"
	Network     string // what the task's network reaches (policy --job-network)
	LogMaxBytes int64
}

// TaskState is where a task is on its backend.
type TaskState string

// Task states.
const (
	TaskPending TaskState = "pending" // accepted, waiting for resources (Reason says why)
	TaskRunning TaskState = "running"
	TaskExited  TaskState = "exited" // ended on its own, ExitCode says how
	TaskFailed  TaskState = "failed" // could not start, or the backend failed it
	// TaskCancelled: stopped by a user or an operator (scancel, docker stop).
	TaskCancelled TaskState = "cancelled"
	TaskTimedOut  TaskState = "timed_out" // reached its time limit
)

// Ended says whether the task will not run again.
func (s TaskState) Ended() bool {
	return s == TaskExited || s == TaskFailed || s == TaskCancelled || s == TaskTimedOut
}

// TaskStatus is what the backend says of one task.
type TaskStatus struct {
	Handle string            // container ID, Slurm job ID
	JobID  string            // the labpool job it runs ("" for none)
	Labels map[string]string // as stored with the task at Start
	Image  string            // the image it runs ("" for a command job, or unknown)
	// ImageLoadedBy is the device ID of a member who loaded that image
	// onto the machine (not who launched it, nor the machine's own user):
	// its name resolved to no registry's image but to one a member brought.
	ImageLoadedBy string
	State         TaskState
	Reason        string // why it is pending, or why it failed (the backend's words)
	ExitCode      int
	Started       time.Time // zero if it never started
	Finished      time.Time // zero while it runs
	OOM           bool      // killed for memory
	Restarts      int       // how often the backend restarted it on its own (Capabilities.Restart)
	// Addr is where the agent dials the task's ports (a container's
	// address, the compute node a Slurm job runs on); Ports maps each task
	// port to the port dialed there.
	Addr  string
	Ports map[int]int
	Hosts []string // the nodes it runs on (Slurm)
}

// TaskEvent says that a task's state may have changed: the manager
// inspects it again.
type TaskEvent struct {
	Handle string
	JobID  string // from its labels, when the backend knows them
	Action string // "start", "die", "oom", "destroy", "restart", "state"
	Time   time.Time
}

// TaskUsage is one reading of a task's resource use.
type TaskUsage struct {
	CPUPercent    float64
	MemUsedBytes  uint64
	MemLimitBytes uint64
	PIDs          []int // host PIDs of its processes on this machine
}

// ErrTaskGone is wrapped by executors when the backend no longer knows a
// task.
var ErrTaskGone = errors.New("the task is gone")

// IsTaskGone says whether err means that the task no longer exists.
func IsTaskGone(err error) bool {
	var nf interface{ NotFound() }
	return errors.Is(err, ErrTaskGone) || errors.As(err, &nf)
}

// Validator is an executor with rules of its own on what it runs (the
// container engine's: no privileged mode, no host namespaces, loopback
// ports only...). The manager calls ValidateTask on every launch before any
// backend call; its refusal (a *RefusedError) names the rule.
type Validator interface {
	ValidateTask(s Spec) error
}

// Pruner is an executor whose tasks leave something behind on the backend
// besides themselves (a container's network). The manager calls Prune after
// each adoption, once the tasks gone while the agent was away are known.
type Pruner interface {
	Prune(ctx context.Context) error
}
