// Package mps runs and watches NVIDIA MPS control daemons, one per GPU
// that holds shares (jobs.Spec.GPUShare), so that a share's processes get
// their part of the GPU's threads and a pinned memory cap.
//
// Each daemon runs as `nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES
// set to its GPU's UUID and a pipe and log directory of its own under
// Config.Dir. It starts when the first share lands on its GPU and is told
// `quit` when the last leaves; Run restarts one that died. Where the
// driver has static SM partitioning (the daemon starts with -S), each
// share gets a partition of the GPU's SMs; elsewhere, its active thread
// percentage.
//
// Containers reach a daemon without the host's IPC namespace (see
// Client): its pipe directory, and a shared-memory directory that is the
// daemon's own /dev/shm (it runs in a mount namespace of its own where
// that directory is bound on /dev/shm) and the client's /dev/shm.
//
// Where there is no nvidia-cuda-mps-control, New returns ErrNoMPS and a
// share is time-sliced: placed and counted the same, capped by nothing.
//
// Run returns only after it has told every daemon it started to quit.
package mps

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrNoMPS means this machine has no nvidia-cuda-mps-control.
var ErrNoMPS = errors.New("no nvidia-cuda-mps-control on this machine")

// Control is the control daemon's program.
const Control = "nvidia-cuda-mps-control"

// Config tunes the daemons.
type Config struct {
	// Dir holds each GPU's directories: Dir/<GPU UUID>/{pipe,shm,log}.
	Dir string
	// Binary is the control program ("": Control, found on PATH).
	Binary string
	// UID and GID own the pipe and shm directories (mode 0700): who the
	// clients run as. -1: the agent's own.
	UID, GID int
	// PrivateShm starts each daemon in a mount namespace of its own whose
	// /dev/shm is its GPU's shm directory (needs root and unshare(1)), so
	// that clients share memory with it through that directory and not
	// through the host's /dev/shm.
	PrivateShm bool
	// Probe is how often Run checks that each daemon lives.
	Probe time.Duration
	// Timeout bounds one control command.
	Timeout time.Duration
	Log     *slog.Logger
}

// DefaultConfig is the agent's: daemons in private mount namespaces,
// checked every 5 s.
func DefaultConfig(dir string) Config {
	return Config{Dir: dir, UID: -1, GID: -1, PrivateShm: true, Probe: 5 * time.Second, Timeout: 10 * time.Second}
}

// Client is what one share's processes need to reach their GPU's daemon:
// the directories to mount and the variables to set.
type Client struct {
	GPU     string // the GPU's UUID
	PipeDir string // mounted at the same path; CUDA_MPS_PIPE_DIRECTORY
	ShmDir  string // mounted as the client's /dev/shm
	// ThreadPercent is the share's active thread percentage (1 to 100).
	ThreadPercent int
	// MemBytes is the share's pinned device memory cap (0: none).
	MemBytes uint64
	// Partition is the static SM partition of the share ("" where the
	// driver has none): CUDA_MPS_SM_PARTITION.
	Partition string
}

// Variables a client's environment gets; a job may set none of them.
const (
	EnvPipe          = "CUDA_MPS_PIPE_DIRECTORY"
	EnvThreads       = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
	EnvMemLimit      = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
	EnvSMPartition   = "CUDA_MPS_SM_PARTITION"
	EnvLog           = "CUDA_MPS_LOG_DIRECTORY"
	EnvVisible       = "CUDA_VISIBLE_DEVICES"
	reservedPrefix   = "CUDA_MPS_"
	clientShmTarget  = "/dev/shm"
	pidFile          = "nvidia-cuda-mps-control.pid"
	maxThreadPercent = 100
)

// Reserved says whether a job's variable k is one the agent sets for MPS
// (every CUDA_MPS_ variable).
func Reserved(k string) bool { return strings.HasPrefix(strings.ToUpper(k), reservedPrefix) }

// ShmTarget is where a client's shm directory is mounted.
const ShmTarget = clientShmTarget

// Env is the client's environment: the pipe directory, its thread
// percentage (or SM partition), and its memory cap on the one GPU it sees
// (device 0).
func (c Client) Env() []string {
	env := []string{EnvPipe + "=" + c.PipeDir, EnvThreads + "=" + strconv.Itoa(c.ThreadPercent)}
	if c.Partition != "" {
		env = append(env, EnvSMPartition+"="+c.Partition)
	}
	if c.MemBytes > 0 {
		env = append(env, EnvMemLimit+"="+MemLimit(c.MemBytes))
	}
	return env
}

// MemLimit writes a cap as CUDA_MPS_PINNED_DEVICE_MEM_LIMIT takes it for
// the client's one GPU: "0=<MiB>M", rounded down to a whole MiB (a cap is
// never raised by rounding).
func MemLimit(b uint64) string { return fmt.Sprintf("0=%dM", max(b>>20, 1)) }

// ThreadPercent is a share's active thread percentage: rounded up to a
// whole percent, 1 to 100.
func ThreadPercent(share float64) int {
	p := int(math.Ceil(share*100 - 1e-9))
	return min(max(p, 1), maxThreadPercent)
}

// gpuUUID is what a GPU's UUID looks like (it names a directory).
var gpuUUID = regexp.MustCompile(`^GPU-[0-9A-Za-z-]{1,64}$`)

func checkGPU(gpu string) error {
	if !gpuUUID.MatchString(gpu) {
		return fmt.Errorf("mps for %q: not a GPU UUID (GPU-...)", gpu)
	}
	return nil
}
