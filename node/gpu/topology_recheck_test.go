//go:build linux && cgo

package gpu_test

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// clock is a test's time, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestMIGChangeReadAgain: MIG turned on on a GPU (and an instance made) is
// seen within a minute, without asking every second: the Sampler's
// Devices, and its generation, change once; nothing changes before.
func TestMIGChangeReadAgain(t *testing.T) {
	lib := newTopoMachine()
	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	gpu.SetClock(s, c.now)
	gen := s.DevicesGeneration()
	sample := func(d time.Duration) {
		t.Helper()
		c.t = c.t.Add(d)
		if _, err := s.Sample(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	sample(0) // the clock starts here
	gputest.EnableMIG(lib.Topo[2].M, gputest.MIGDevice("MIG-cccc", "NVIDIA A100-SXM4-40GB MIG 7g.40gb", 0, 0, 40<<30))
	calls := lib.Topo[2].M.GetMigModeCalls()
	for range 30 {
		sample(time.Second)
	}
	if n := len(lib.Topo[2].M.GetMigModeCalls()) - len(calls); n != 0 {
		t.Errorf("30 samples in 30 s asked the MIG mode %d times; want none", n)
	}
	if m := s.Devices()[2].MIG; m.Enabled || s.DevicesGeneration() != gen {
		t.Errorf("after 30 s: MIG %+v, generation %d -> %d; not read again yet", m, gen, s.DevicesGeneration())
	}
	for range 31 {
		sample(time.Second)
	}
	m := s.Devices()[2].MIG
	if m == nil || !m.Enabled || len(m.Instances) != 1 || m.Instances[0].UUID != "MIG-cccc" {
		t.Fatalf("after a minute: GPU 2 MIG %+v; want on, with MIG-cccc", m)
	}
	if g := s.DevicesGeneration(); g != gen+1 {
		t.Errorf("generation %d -> %d; want one change", gen, g)
	}
	if l := s.Devices()[2].Links; len(l) != 3 {
		t.Errorf("GPU 2's links after the re-read: %+v", l)
	}
	for range 120 {
		sample(time.Second)
	}
	if g := s.DevicesGeneration(); g != gen+1 {
		t.Errorf("generation %d -> %d while nothing changed; want one change", gen, g)
	}
}

// TestGPUFoundOrLostReadAgain: a GPU that appears (hot-plugged, or back
// after a reset) is opened and sampled within a minute; a GPU found lost
// in a Sample makes the topology read again at once (its links go).
func TestGPUFoundOrLostReadAgain(t *testing.T) {
	lib := gputest.NewLibrary(2)
	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &clock{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	gpu.SetClock(s, c.now)
	gen := s.DevicesGeneration()
	lib.Mu.Lock()
	lib.Devices = append(lib.Devices, gputest.NewDevice(2))
	lib.Mu.Unlock()
	var stats []gpu.Stats
	for range 61 {
		c.t = c.t.Add(time.Second)
		if stats, err = s.Sample(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if len(stats) != 3 || stats[2].UUID != lib.Devices[2].UUID || len(s.Devices()) != 3 {
		t.Fatalf("after a minute: %d GPUs sampled, %d devices; want the new GPU 2 too", len(stats), len(s.Devices()))
	}
	if s.DevicesGeneration() == gen {
		t.Error("the generation did not move when a GPU appeared")
	}
	gen = s.DevicesGeneration()
	lib.Devices[1].Mu.Lock()
	lib.Devices[1].Fail = map[string]nvml.Return{"GetUtilizationRates": nvml.ERROR_GPU_IS_LOST}
	lib.Devices[1].Mu.Unlock()
	c.t = c.t.Add(time.Second)
	if stats, err = s.Sample(t.Context()); err != nil {
		t.Fatal(err)
	}
	if stats[1].Health != gpu.HealthLost || s.DevicesGeneration() == gen {
		t.Errorf("GPU 1 %s, generation %d -> %d; want lost, and the topology read again at once", stats[1].Health, gen, s.DevicesGeneration())
	}
}
