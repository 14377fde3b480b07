//go:build !(linux && cgo)

package gpu

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

func TestNoNVMLReason(t *testing.T) {
	for _, tc := range []struct{ goos, want string }{
		{"darwin", "this OS has no NVIDIA management library: this machine offers no GPUs"},
		{"windows", "this OS has no NVIDIA management library: this machine offers no GPUs"},
		{"linux", "this build of labpool has no NVIDIA management library (it was built without cgo): this machine offers no GPUs"},
	} {
		if got := noNVMLReason(tc.goos); got != tc.want {
			t.Errorf("noNVMLReason(%q) = %q, want %q", tc.goos, got, tc.want)
		}
	}
}

// Without NVML, Open and OpenSimulated fail with ErrNoDriver (the daemon
// monitors the host only), and a nil Sampler answers every call.
func TestOpenWithoutNVML(t *testing.T) {
	for name, open := range map[string]func() (*Sampler, error){
		"Open":          func() (*Sampler, error) { return Open(DefaultConfig()) },
		"OpenSimulated": func() (*Sampler, error) { return OpenSimulated(2, "seed", DefaultConfig()) },
	} {
		s, err := open()
		if s != nil || !errors.Is(err, ErrNoDriver) || err.Error() != noNVMLReason(runtime.GOOS) {
			t.Errorf("%s = %v, %v; want nil and the plain no-NVML sentence", name, s, err)
		}
	}
	var s *Sampler
	if d := s.Devices(); d != nil {
		t.Errorf("Devices = %v", d)
	}
	if _, err := s.Sample(context.Background()); !errors.Is(err, ErrNoDriver) {
		t.Errorf("Sample: %v", err)
	}
	if _, err := s.Clear(context.Background(), "GPU-x"); !errors.Is(err, ErrNoDriver) {
		t.Errorf("Clear: %v", err)
	}
	s.ReadEnergy("GPU-x")
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
