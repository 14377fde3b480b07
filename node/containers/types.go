// Package containers launches and watches this node's job containers
// through the Docker Engine API. It exposes typed operations only (never a
// Docker API proxy), hardens every container it creates, labels it as
// labpool's, and refuses to touch containers that do not carry its label.
package containers

import (
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// Labels every labpool container carries: LabelManaged, and the task's
// labels (jobs.Label*).
const (
	LabelManaged  = "labpool.managed" // "true"
	LabelJob      = jobs.LabelJob
	LabelOwner    = jobs.LabelOwner
	LabelGPUs     = jobs.LabelGPUs
	LabelSpecHash = jobs.LabelSpecHash
	LabelNode     = jobs.LabelNode
)

// Launch is a validated request to create one container. Callers (node/jobs)
// have already refused anything dangerous; Create adds the hardening.
type Launch struct {
	Name        string
	Image       string
	Cmd         []string
	Env         []string          // K=V
	GPUs        []string          // UUIDs to expose (NVIDIA device request)
	CPUs        float64           // 0 = no limit
	MemoryBytes int64             // 0 = no limit
	ShmBytes    int64             // 0 = Docker's default
	Binds       []Bind            // shared folders, already resolved and checked
	Ports       []int             // container TCP ports the tunnels reach (published nowhere)
	Restart     string            // "" / "no" / "on-failure"
	Network     string            // what the job's own network reaches: NetIsolated, NetOutside ("") or NetHost
	Labels      map[string]string // labpool.* labels (LabelManaged is added)

	// User is "uid:gid" to run as; "" means Config.JobUser, or the image's
	// own user where the engine remaps users or AllowRoot is set. Root
	// ("root", "0", "0:...") needs an engine that remaps users, or
	// AllowRoot; elsewhere only a numeric "uid:gid" is taken.
	User string
	// AllowRoot lets User be root on an engine that does not remap users
	// (the machine's policy says so): root then keeps no capability that
	// acts on files, and its files in a read-write folder are root's.
	AllowRoot bool
	// LogMaxBytes caps the container's log (json-file, two files of half
	// each); 0 = the engine's default (unbounded).
	LogMaxBytes int64
}

// Bind mounts a host directory into the container.
type Bind struct {
	HostPath string
	Target   string
	ReadOnly bool
}

// Container is what Docker reports of one labpool container.
type Container struct {
	ID      string
	Name    string
	Image   string
	ImageID string // the image it runs, as the engine resolved Image
	// ImageLoadedBy is who loaded that image through the agent (Image.LoadedBy).
	ImageLoadedBy string
	Labels        map[string]string
	State         string // created, running, exited, dead, ...
	Running       bool
	ExitCode      int
	Started       time.Time // zero if never started
	Finished      time.Time // zero if still running
	OOMKilled     bool
	// Restarts is how often the engine restarted it (a restart policy).
	Restarts int
	// Addr is where the agent reaches the container's ports: its address
	// on its own network ("" when it does not run), or 127.0.0.1 for a
	// container an older agent published there.
	Addr  string
	Ports map[int]int // container port -> port to dial at Addr
	Error string      // Docker's error for a failed start
}

// Event is a change of a labpool container's state.
type Event struct {
	ID     string
	Action string // "start", "die", "oom", "destroy", ...
	Labels map[string]string
	Time   time.Time
}

// Usage is one stats reading of a container.
type Usage struct {
	CPUPercent    float64
	MemUsedBytes  uint64
	MemLimitBytes uint64
	PIDs          []int // host PIDs of the container's processes
}

// Image is one image in the engine (GET /v1/images).
type Image struct {
	ID      string    `json:"id"`
	Tags    []string  `json:"tags"`
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
	// LoadedBy is the device ID of who loaded the image through the agent
	// ("" when it came another way: a pull, the owner's own docker).
	LoadedBy string `json:"loaded_by,omitempty"`
	// LoadedByName names LoadedBy for a person: the app sets it from the
	// pool's members, whatever a node sent.
	LoadedByName string `json:"loaded_by_name,omitempty"`
}

// Progress reports a long operation (image load or pull): done and total
// bytes (total 0 when unknown) and a status line.
type Progress func(done, total int64, status string)
