// Package agent samples what this machine offers (host and GPUs) and serves
// it as an http.Handler:
//
//	GET /v1/node/info    -> Info
//	GET /v1/node/sample  -> Sample, the latest one
//
// Telemetry.Run samples at Config.Interval and hands each Sample to every
// subscriber without ever waiting for one: a subscriber that falls behind
// misses samples. Run returns only after every goroutine it started has
// exited, and then closes the subscribers' channels.
//
// PeerHandler builds what members reach of this machine from the parts that
// serve it (telemetry, replica stream, join, jobs, folders, copies), each
// built by its owner and passed in, behind the pool's authorizer.
package agent

import (
	"context"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
)

// GPUSource reads the GPUs of this machine; *gpu.Sampler is one.
type GPUSource interface {
	Devices() []gpu.Info
	Sample(ctx context.Context) ([]gpu.Stats, error)
}

// devicesWatcher is a GPUSource whose Devices change while it runs
// (*gpu.Sampler): DevicesGeneration moves at each change.
type devicesWatcher interface {
	DevicesGeneration() uint64
}

// HostSource reads this machine; *host.Sampler is one.
type HostSource interface {
	Info(ctx context.Context) (host.Info, error)
	Sample(ctx context.Context) (host.Stats, error)
}

var (
	_ GPUSource  = (*gpu.Sampler)(nil)
	_ HostSource = (*host.Sampler)(nil)
)

// Sample is one reading of this machine. Its slices are shared by every
// subscriber: read them, never change them.
type Sample struct {
	Time     time.Time   `json:"time"`
	Host     host.Stats  `json:"host"`
	GPUs     []gpu.Stats `json:"gpus"`
	GPUError string      `json:"gpu_error,omitempty"` // why GPUs is empty or stale, e.g. "no NVIDIA GPU found"
	// Holding is who holds the GPUs and their processes when the sample
	// was taken: the readings carry hardware only (holding.go).
	Holding alloc.Holding `json:"holding,omitzero"`
}

// Info is what changes rarely about this machine.
type Info struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Host      host.Info  `json:"host"`
	GPUs      []gpu.Info `json:"gpus"`
	GPUError  string     `json:"gpu_error,omitempty"`
	Version   string     `json:"version"`
	StartedAt time.Time  `json:"started_at"`
}

// Config configures a Telemetry.
type Config struct {
	ID      string // device ID of this machine
	Name    string // name shown for this machine
	Version string // labpool version
	// Interval is the time between two samples; each sample must finish
	// within it.
	Interval time.Duration
	// Buffer is how many samples a subscriber's channel holds before
	// further ones are dropped for it.
	Buffer int
	// GPUError says why there is no GPUSource (the error of gpu.Open);
	// empty means gpu.ErrNoDriver's message.
	GPUError string
	// Annotate, when set, completes each GPU reading before it is
	// published (the job manager: quarantines) and says in held who holds
	// each GPU and process (Sample.Holding). taken is when the sample
	// began.
	Annotate func(taken time.Time, gpus []gpu.Stats, held *alloc.Holding)
	// DevicesChanged, when set, hears every GPU (Info.GPUs) when they
	// changed since the last sample: one appeared or was lost, MIG changed
	// (a GPUSource with DevicesGeneration says so). It must not block.
	DevicesChanged func(gpus []gpu.Info)
}

// DefaultConfig returns the configuration the daemon uses.
func DefaultConfig() Config {
	return Config{Interval: time.Second, Buffer: 4}
}
