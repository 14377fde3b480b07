//go:build linux && cgo

package jobs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

const (
	migA = "MIG-5c9f1a2e-6b1d-5b8e-9a3f-0000000000a1"
	migB = "MIG-5c9f1a2e-6b1d-5b8e-9a3f-0000000000b2"
)

// migDevices reads, through gpu.Sampler, two fake GPUs whose MIG answers
// come from go-nvml's mock: GPU 0 without MIG, GPU 1 in MIG mode with two
// instances.
func migDevices(t *testing.T) []gpu.Info {
	t.Helper()
	lib := gputest.NewTopoLibrary(2)
	gputest.NoTopology(lib.Topo[0].M)
	gputest.NoTopology(lib.Topo[1].M)
	gputest.EnableMIG(lib.Topo[1].M,
		gputest.MIGDevice(migA, "NVIDIA A100-SXM4-40GB MIG 3g.20gb", 1, 0, 20<<30),
		gputest.MIGDevice(migB, "NVIDIA A100-SXM4-40GB MIG 1g.5gb", 5, 0, 5<<30))
	s, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	devs := s.Devices()
	if devs[1].MIG == nil || len(devs[1].MIG.Instances) != 2 {
		t.Fatalf("gpu 1 MIG = %+v; want two instances", devs[1].MIG)
	}
	return devs
}

// TestSubmitMIG: a MIG instance asked by UUID is granted and reaches the
// container as that UUID; a second job asking for it is refused as busy.
func TestSubmitMIG(t *testing.T) {
	devs := migDevices(t)
	rt := newFakeRuntime()
	stats := fakeGPUs(2)
	stats[0].UUID, stats[1].UUID = devs[0].UUID, devs[1].UUID
	m := startManager(t, rt, fixedGPUs(stats), &memStore{}, nil)
	m.ledger.SetTopology(devs)

	j, err := m.Submit(context.Background(), member("OWNER"), Spec{Image: "img", MIGIDs: []string{migA}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(j.GPUs, []string{migA}) || !slices.Equal(j.GPUIndexes, []int{1}) {
		t.Errorf("job GPUs %v, indexes %v; want the MIG instance, on GPU 1", j.GPUs, j.GPUIndexes)
	}
	// The sample names the job on the instance's GPU: its processes are the job's.
	sample := slices.Clone(stats)
	var held alloc.Holding
	m.AnnotateGPUs(time.Now(), sample, &held)
	if held.GPU(sample[1].UUID).JobID() != j.ID || held.GPU(sample[0].UUID).Held() {
		t.Errorf("annotated GPUs held by %+v, %+v; want GPU 1 by %s", held.GPU(sample[0].UUID), held.GPU(sample[1].UUID), j.ID)
	}
	l := rt.launches[0]
	if !slices.Equal(l.GPUs, []string{migA}) {
		t.Errorf("launch GPUs %v; want the MIG UUID", l.GPUs)
	}

	_, err = m.Submit(context.Background(), member("OTHER"), Spec{Image: "img", MIGIDs: []string{migA}})
	var busy *BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "job "+j.Name) {
		t.Errorf("a second job on the same instance: %v; want busy, naming job %s", err, j.Name)
	}
	// The other instance of the same GPU is free.
	if _, err := m.Submit(context.Background(), member("OTHER"), Spec{Image: "img", MIGIDs: []string{migB}}); err != nil {
		t.Errorf("the other instance: %v", err)
	}
	// The GPU in MIG mode is never granted whole: a count gets GPU 0 only.
	if _, err := m.Submit(context.Background(), member("OTHER"), Spec{Image: "img", GPUs: 2}); err == nil ||
		!strings.Contains(err.Error(), "GPU 1") {
		t.Errorf("2 GPUs with GPU 1 in MIG mode and its instances held: %v; want GPU 1 named busy", err)
	}
}

func TestGrantMIG(t *testing.T) {
	devs := migDevices(t)
	stats := fakeGPUs(2)
	stats[0].UUID, stats[1].UUID = devs[0].UUID, devs[1].UUID
	l := NewLedger()
	l.SetTopology(devs)
	var refused *RefusedError
	if _, err := l.Grant("a", Request{MIG: []string{"MIG-none"}}, stats, nil); !errors.As(err, &refused) {
		t.Errorf("an instance not here: %v; want refused", err)
	}
	if got, err := l.Grant("a", Request{Count: 1}, stats, nil); err != nil || !slices.Equal(got, []string{devs[0].UUID}) {
		t.Fatalf("a count: %v, %v; want GPU 0 (GPU 1 is in MIG mode)", got, err)
	}
	if _, err := l.Grant("b", Request{Count: 1}, stats, nil); err == nil || !strings.Contains(err.Error(), "MIG on") {
		t.Errorf("a count with only a MIG GPU left: %v; want it to say MIG is on", err)
	}
	if got, err := l.Grant("b", Request{MIG: []string{migA, migB}}, stats, nil); err != nil || !slices.Equal(got, []string{migA, migB}) {
		t.Errorf("both instances: %v, %v", got, err)
	}
	l.Quarantine(Quarantine{UUID: devs[1].UUID, Reason: "XID 79"})
	l.Release("b")
	if _, err := l.Grant("c", Request{MIG: []string{migA}}, stats, nil); !errors.As(err, &refused) {
		t.Errorf("an instance of a quarantined GPU: %v; want refused", err)
	}
}

func TestValidateMIG(t *testing.T) {
	for _, s := range []Spec{
		{Image: "i", MIGIDs: []string{"GPU-123"}},
		{Image: "i", MIGIDs: []string{migA, migA}},
		{Image: "i", MIGIDs: []string{migA}, GPUs: 1},
		{Image: "i", MIGIDs: []string{migA}, GPUIDs: []int{0}},
		{Image: "i", MIGIDs: []string{"MIG-a,GPU-b"}},
	} {
		var refused *RefusedError
		if err := Validate(s, dockerCaps, nil, 2); !errors.As(err, &refused) {
			t.Errorf("Validate(MIG %v, GPUs %d, ids %v) = %v; want refused", s.MIGIDs, s.GPUs, s.GPUIDs, err)
		}
	}
	if err := Validate(Spec{Image: "i", MIGIDs: []string{migA, migB}}, dockerCaps, nil, 2); err != nil {
		t.Errorf("two MIG instances: %v", err)
	}
}
