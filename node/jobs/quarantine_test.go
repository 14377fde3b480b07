package jobs

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

const xid79 = "XID 79 (GPU has fallen off the bus)"

func TestLedgerQuarantine(t *testing.T) {
	l := NewLedger()
	gpus := fakeGPUs(4)
	gpus[3].Health, gpus[3].HealthReason = gpu.HealthLost, "GPU is lost (read memory: ERROR_GPU_IS_LOST)"
	if !l.Quarantine(Quarantine{UUID: "GPU-0001", Index: 1, Reason: xid79}) {
		t.Fatal("Quarantine of a new GPU = false")
	}
	if l.Quarantine(Quarantine{UUID: "GPU-0001", Index: 1, Reason: "other"}) {
		t.Error("Quarantine twice = true")
	}
	// By index: refused, naming the fault, never queued.
	_, err := l.Grant("j1", Request{Indexes: []int{1}}, gpus, nil)
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "gpu 1 quarantined: "+xid79) {
		t.Fatalf("a launch asking for quarantined gpu 1: %v; want a refusal naming the fault", err)
	}
	if _, err := l.Grant("j1", Request{Indexes: []int{3}}, gpus, nil); !errors.As(err, &re) || !strings.Contains(err.Error(), "gpu 3 lost: GPU is lost") {
		t.Errorf("a launch asking for lost gpu 3: %v", err)
	}
	// By count: skipped.
	got, err := l.Grant("j2", Request{Count: 2}, gpus, nil)
	if err != nil || strings.Join(got, ",") != "GPU-0000,GPU-0002" {
		t.Fatalf("grant 2 beside a quarantined and a lost GPU: %v %v", got, err)
	}
	_, err = l.Grant("j3", Request{Count: 1}, gpus, nil)
	for _, want := range []string{"GPU 1: quarantined: " + xid79, "GPU 3: lost: GPU is lost"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("busy error %v does not say %q", err, want)
		}
	}
	if q, ok := l.Unquarantine("GPU-0001"); !ok || q.Reason != xid79 {
		t.Errorf("Unquarantine = %+v, %v", q, ok)
	}
	if got, err := l.Grant("j4", Request{Indexes: []int{1}}, gpus, nil); err != nil || got[0] != "GPU-0001" {
		t.Errorf("gpu 1 after its quarantine was cleared: %v %v", got, err)
	}
}

// memHealth is a HealthStore in memory.
type memHealth struct {
	mu    sync.Mutex
	st    HealthState
	saves int
}

func (h *memHealth) SaveHealth(st HealthState) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.st = HealthState{Quarantined: maps.Clone(st.Quarantined), Acks: maps.Clone(st.Acks)}
	h.saves++
	return nil
}

func (h *memHealth) LoadHealth() (HealthState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return HealthState{Quarantined: maps.Clone(h.st.Quarantined), Acks: maps.Clone(h.st.Acks)}, nil
}

// fakeClearer records Clear and Acknowledge.
type fakeClearer struct {
	mu      sync.Mutex
	cleared []string
	acked   map[string]gpu.Ack
}

func (c *fakeClearer) Clear(_ context.Context, uuid string) (gpu.Ack, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleared = append(c.cleared, uuid)
	return gpu.Ack{ECCUncorrected: 7}, nil
}

func (c *fakeClearer) Acknowledge(_ context.Context, uuid string, a gpu.Ack) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.acked == nil {
		c.acked = map[string]gpu.Ack{}
	}
	c.acked[uuid] = a
	return nil
}

// TestQuarantineLifecycle: NVML's critical fault quarantines a GPU, which
// then reads quarantined even when NVML no longer says so, survives a
// restart, refuses launches naming it, and is cleared by an owner or the
// machine's user only.
func TestQuarantineLifecycle(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	hs := &memHealth{}
	gs := &fakeGPUState{}
	gs.set(fakeGPUs(2))
	m := startManager(t, rt, gs, st, nil)
	cl := &fakeClearer{}
	if err := m.OpenHealth(t.Context(), hs, cl); err != nil {
		t.Fatal(err)
	}

	sample := fakeGPUs(2)
	sample[1].Health, sample[1].HealthReason = gpu.HealthQuarantined, xid79
	m.AnnotateGPUs(time.Now(), sample, &alloc.Holding{})
	if q := hs.st.Quarantined["GPU-0001"]; q.Reason != xid79 || q.Index != 1 {
		t.Fatalf("kept quarantines: %+v", hs.st.Quarantined)
	}
	// A fault joining it updates the reason.
	both := xid79 + "; uncorrectable ECC errors"
	sample = fakeGPUs(2)
	sample[1].Health, sample[1].HealthReason = gpu.HealthQuarantined, both
	m.AnnotateGPUs(time.Now(), sample, &alloc.Holding{})
	if q := hs.st.Quarantined["GPU-0001"]; q.Reason != both {
		t.Fatalf("kept quarantine after a new fault: %+v", q)
	}
	sample[1].HealthReason = xid79 // the reason follows NVML's while NVML reports the fault
	m.AnnotateGPUs(time.Now(), sample, &alloc.Holding{})
	// The XID is reported once: the next sample reads ok from NVML.
	sample = fakeGPUs(2)
	m.AnnotateGPUs(time.Now(), sample, &alloc.Holding{})
	if sample[1].Health != gpu.HealthQuarantined || sample[1].HealthReason != xid79 || sample[0].Health != "" {
		t.Fatalf("after the XID: gpu 1 %q (%q), gpu 0 %q", sample[1].Health, sample[1].HealthReason, sample[0].Health)
	}
	gs.set(sample)
	_, err := m.Submit(t.Context(), member("alice"), Spec{Image: "busybox", GPUIDs: []int{1}, Queue: true})
	if err == nil || !strings.Contains(err.Error(), "gpu 1 quarantined: "+xid79) {
		t.Fatalf("a queued launch asking for gpu 1: %v; want refused naming the fault", err)
	}
	j, err := m.Submit(t.Context(), member("alice"), Spec{Image: "busybox", GPUs: 1})
	if err != nil || len(j.GPUIndexes) != 1 || j.GPUIndexes[0] != 0 {
		t.Fatalf("a launch asking for 1 GPU: %+v %v; want gpu 0", j.GPUIndexes, err)
	}

	// A restart: the quarantine is read back, the acks handed to NVML.
	hs.st.Acks = map[string]gpu.Ack{"GPU-0000": {ECCUncorrected: 2}}
	m2 := startManager(t, newFakeRuntime(), gs, &memStore{}, nil)
	cl2 := &fakeClearer{}
	if err := m2.OpenHealth(t.Context(), hs, cl2); err != nil {
		t.Fatal(err)
	}
	if q, ok := m2.Ledger().Quarantined("GPU-0001"); !ok || q.Reason != xid79 {
		t.Errorf("after a restart: %+v, %v", q, ok)
	}
	if cl2.acked["GPU-0000"] != (gpu.Ack{ECCUncorrected: 2}) {
		t.Errorf("acks handed to NVML after a restart: %+v", cl2.acked)
	}

	for _, c := range []Caller{admin("bob"), member("alice"), viewer("eve"), {ID: "stranger"}} {
		_, err := m.ClearGPU(t.Context(), c, 1)
		var re *RefusedError
		if !errors.As(err, &re) || !re.Forbidden || !strings.Contains(err.Error(), "only the pool's owners and this machine's user clear a quarantine") {
			t.Errorf("%+v clears a quarantine: %v", c, err)
		}
	}
	if _, err := m.ClearGPU(t.Context(), Caller{ID: "own", Role: RoleOwner}, 0); !errors.Is(err, ErrConflict) ||
		strings.Contains(err.Error(), "job") || !strings.Contains(err.Error(), "not quarantined") {
		t.Errorf("clearing a GPU that is not quarantined: %v; want a conflict that says so, not in a job's words", err)
	}
	if _, err := m.ClearGPU(t.Context(), Caller{ID: "own", Role: RoleOwner}, 9); !errors.Is(err, ErrNotFound) {
		t.Errorf("clearing gpu 9 of 2: %v", err)
	}
	before := time.Now()
	q, err := m.ClearGPU(t.Context(), Caller{ID: "NODE"}, 1) // this machine's user
	if err != nil || q.Reason != xid79 {
		t.Fatalf("ClearGPU by the machine's user: %+v %v", q, err)
	}
	if _, ok := hs.st.Quarantined["GPU-0001"]; ok || hs.st.Acks["GPU-0001"] != (gpu.Ack{ECCUncorrected: 7}) {
		t.Errorf("kept after clear: %+v", hs.st)
	}
	if len(cl.cleared) != 1 || cl.cleared[0] != "GPU-0001" {
		t.Errorf("NVML faults cleared: %v", cl.cleared)
	}
	// A sample taken before the clear does not quarantine it again; one
	// after it with a (new) fault does.
	stale := fakeGPUs(2)
	stale[1].Health, stale[1].HealthReason = gpu.HealthQuarantined, xid79
	m.AnnotateGPUs(before, stale, &alloc.Holding{})
	if _, ok := m.Ledger().Quarantined("GPU-0001"); ok {
		t.Error("a sample taken before the clear quarantined the GPU again")
	}
	m.AnnotateGPUs(time.Now(), stale, &alloc.Holding{})
	if _, ok := m.Ledger().Quarantined("GPU-0001"); !ok {
		t.Error("a new fault after the clear did not quarantine the GPU")
	}
}

// TestAnnotateJobs: each GPU names the job holding it; each process its
// job and owner when it runs in the job's container.
func TestAnnotateJobs(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 2, &memStore{})
	j, err := m.Submit(t.Context(), member("alice"), Spec{Image: "busybox", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	j, _ = m.Get(j.ID)
	procs := t.TempDir()
	old := procRoot
	procRoot = procs
	t.Cleanup(func() { procRoot = old })
	container := j.Container + strings.Repeat("0", 64-len(j.Container))
	m.mu.Lock()
	m.jobs[j.ID].Container = container
	m.mu.Unlock()
	writeCgroup(t, procs, 100, "0::/system.slice/docker-"+container+".scope\n")
	writeCgroup(t, procs, 200, "0::/user.slice/user-1000.slice/session-2.scope\n")
	gs := fakeGPUs(2)
	gs[0].Processes = []gpu.Process{{PID: 100, MemBytes: 1 << 30}}
	gs[1].Processes = []gpu.Process{{PID: 200, MemBytes: 2 << 30}, {PID: 300}}
	var held alloc.Holding
	m.AnnotateGPUs(time.Now(), gs, &held)
	if held.GPU("GPU-0000").JobID() != j.ID || held.GPU("GPU-0001").Held() {
		t.Errorf("holders of the GPUs: %+v, %+v; want %q, none", held.GPU("GPU-0000"), held.GPU("GPU-0001"), j.ID)
	}
	if h := held.Proc(100); h.JobID() != j.ID || h.Member != "alice" {
		t.Errorf("the job's process: %+v", h)
	}
	for _, p := range gs[1].Processes {
		if h := held.Proc(p.PID); h.Held() {
			t.Errorf("a process outside labpool: %d held by %+v", p.PID, h)
		}
	}
}

func writeCgroup(t *testing.T, root string, pid int, text string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestContainerInCgroup(t *testing.T) {
	id := strings.Repeat("ab12", 16)
	tests := []struct{ text, want string }{
		{"0::/system.slice/docker-" + id + ".scope\n", id},                // v2, systemd driver
		{"0::/docker/" + id + "\n", id},                                   // v2, cgroupfs
		{"12:memory:/docker/" + id + "\n11:cpu:/docker/" + id + "\n", id}, // v1
		{"0::/system.slice/docker-" + id + ".scope/init.scope\n", id},     // nested
		{"0::/user.slice/user-1000.slice/session-3.scope\n", ""},          // a login session
		{"0::/system.slice/docker.service\n", ""},                         // dockerd itself
		{"0::/docker/" + id[:12] + "\n", ""},                              // not a full ID
		{"0::/kubepods/burstable/pod1/" + id + "\n", ""},                  // not Docker's
		{"garbage", ""},
	}
	for _, tt := range tests {
		if got := containerInCgroup(tt.text); got != tt.want {
			t.Errorf("containerInCgroup(%q) = %q; want %q", tt.text, got, tt.want)
		}
	}
}

// TestQuarantineSaysLedgerChanged: quarantining and clearing a GPU tell
// Changes, so the published units say at once which GPUs are down (a
// planner reading a cleared GPU as quarantined refused a launch).
func TestQuarantineSaysLedgerChanged(t *testing.T) {
	l := NewLedger()
	drained := func() bool {
		select {
		case <-l.Changes():
			return true
		default:
			return false
		}
	}
	q := Quarantine{UUID: "GPU-2", Index: 2, Reason: "XID 79"}
	for _, step := range []struct {
		name string
		do   func()
	}{
		{"quarantine", func() { l.Quarantine(q) }},
		{"requarantine", func() { q.Reason = "XID 48"; l.Requarantine(q) }},
		{"clear", func() { l.Unquarantine("GPU-2") }},
	} {
		step.do()
		if !drained() {
			t.Errorf("%s: Changes said nothing", step.name)
		}
	}
}
