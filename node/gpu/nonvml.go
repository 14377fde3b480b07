//go:build !(linux && cgo)

package gpu

import (
	"context"
	"runtime"
)

// noNVML is Open's error in a build without NVML. It is ErrNoDriver to
// errors.Is, so callers treat it as a machine without GPUs.
type noNVML struct{ goos string }

func (e noNVML) Error() string      { return noNVMLReason(e.goos) }
func (noNVML) Is(target error) bool { return target == ErrNoDriver }
func errNoNVML() error              { return noNVML{runtime.GOOS} }

// noNVMLReason says, for people, why a build for goos reads no GPU.
func noNVMLReason(goos string) string {
	if goos == "linux" {
		return "this build of labpool has no NVIDIA management library (it was built without cgo): this machine offers no GPUs"
	}
	return "this OS has no NVIDIA management library: this machine offers no GPUs"
}

// Sampler is the NVML sampler's API in a build without NVML: Open never
// returns one, and a nil *Sampler reads no GPU.
type Sampler struct{}

// Open returns an error that is ErrNoDriver: there is no NVML to load.
func Open(Config) (*Sampler, error) { return nil, errNoNVML() }

// OpenSimulated returns the same error as Open: simulated GPUs go through
// the NVML sampler, which this build lacks.
func OpenSimulated(int, string, Config) (*Sampler, error) { return nil, errNoNVML() }

// Devices returns no GPU.
func (*Sampler) Devices() []Info { return nil }

// DevicesGeneration never moves.
func (*Sampler) DevicesGeneration() uint64 { return 0 }

// Sample returns Open's error.
func (*Sampler) Sample(context.Context) ([]Stats, error) { return nil, errNoNVML() }

// ReadEnergy does nothing.
func (*Sampler) ReadEnergy(...string) {}

// Clear returns Open's error: there is no GPU to clear.
func (*Sampler) Clear(context.Context, string) (Ack, error) { return Ack{}, errNoNVML() }

// Acknowledge returns Open's error.
func (*Sampler) Acknowledge(context.Context, string, Ack) error { return errNoNVML() }

// Close does nothing.
func (*Sampler) Close() error { return nil }
