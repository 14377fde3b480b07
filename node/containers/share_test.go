package containers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/mps"
)

// fakeSharer is a Sharer whose calls are recorded.
type fakeSharer struct {
	calls   []string
	acquire func(gpu, holder string, share float64, mem uint64) (mps.Client, error)
}

func (s *fakeSharer) Acquire(_ context.Context, gpu, holder string, share float64, mem uint64) (mps.Client, error) {
	s.calls = append(s.calls, "acquire "+gpu+" "+holder)
	return s.acquire(gpu, holder, share, mem)
}

func (s *fakeSharer) Adopt(_ context.Context, holder string, c mps.Client) error {
	s.calls = append(s.calls, "adopt "+c.GPU+" "+holder+" "+c.Partition)
	return nil
}

func (s *fakeSharer) Release(_ context.Context, gpu, holder string) error {
	s.calls = append(s.calls, "release "+gpu+" "+holder)
	return nil
}

func (s *fakeSharer) Owner() string { return DefaultJobUser }

func (s *fakeSharer) Sweep(context.Context) error {
	s.calls = append(s.calls, "sweep")
	return nil
}

func newSharer() *fakeSharer {
	return &fakeSharer{acquire: func(gpu, _ string, share float64, mem uint64) (mps.Client, error) {
		return mps.Client{GPU: gpu, PipeDir: "/run/labpool/mps/" + gpu + "/pipe", ShmDir: "/run/labpool/mps/" + gpu + "/shm",
			ThreadPercent: mps.ThreadPercent(share), MemBytes: mem, Partition: gpu + "/p1"}, nil
	}}
}

func shareTask() jobs.Task {
	return jobs.Task{ID: "0123456789abcdef", Name: "nb", Image: "img", GPUs: []string{"GPU-1"}, GPUShare: 0.25, GPUMemBytes: 20 << 30,
		Env: []string{"A=1"}, Labels: map[string]string{LabelJob: "0123456789abcdef"}, Container: jobs.ContainerOptions{ShmBytes: 1 << 30}}
}

// TestShareContainerHasNoHostIPC: a container with an MPS share reaches
// its GPU's daemon through the pipe directory and the daemon's shm as its
// /dev/shm, with its share's variables, and keeps an IPC namespace of its
// own: never the host's.
func TestShareContainerHasNoHostIPC(t *testing.T) {
	f := &fakeDocker{start: func(string) error { return nil }, state: &container.State{Running: true, Status: "running"}}
	sh := newSharer()
	ex := NewExecutor(fakeRuntime(DefaultConfig(), f), ExecutorConfig{MPS: sh})
	if !ex.Capabilities().MPS {
		t.Fatal("an executor with MPS says shares are time-sliced")
	}
	if _, err := ex.Start(context.Background(), shareTask()); err != nil {
		t.Fatal(err)
	}
	h := f.created
	if h.IpcMode != container.IPCModePrivate || h.IpcMode.IsHost() {
		t.Errorf("IpcMode = %q; want private, never host", h.IpcMode)
	}
	pipe, shm := "/run/labpool/mps/GPU-1/pipe", "/run/labpool/mps/GPU-1/shm"
	want := []mount.Mount{
		{Type: mount.TypeBind, Source: pipe, Target: pipe, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}},
		{Type: mount.TypeBind, Source: shm, Target: "/dev/shm", BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}},
	}
	for _, w := range want {
		if !slices.ContainsFunc(h.Mounts, func(m mount.Mount) bool {
			return m.Source == w.Source && m.Target == w.Target && m.Type == w.Type && !m.ReadOnly
		}) {
			t.Errorf("mounts %+v; want %s on %s", h.Mounts, w.Source, w.Target)
		}
	}
	if h.ShmSize != 0 {
		t.Errorf("ShmSize = %d; the daemon's shm is the container's /dev/shm", h.ShmSize)
	}
	for _, e := range []string{"CUDA_MPS_PIPE_DIRECTORY=" + pipe, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25",
		"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480M", "CUDA_MPS_SM_PARTITION=GPU-1/p1", "NVIDIA_VISIBLE_DEVICES=GPU-1", "A=1"} {
		if !slices.Contains(f.config.Env, e) {
			t.Errorf("env %v; want %s", f.config.Env, e)
		}
	}
	if f.labels[LabelMPSGPU] != "GPU-1" || f.labels[LabelMPSPartition] != "GPU-1/p1" {
		t.Errorf("labels %v", f.labels)
	}
	if !slices.Equal(sh.calls, []string{"acquire GPU-1 0123456789abcdef"}) {
		t.Errorf("sharer calls %v; want one acquire and no release while it runs", sh.calls)
	}

	// It ends: its share goes.
	f.state = &container.State{Status: "exited"}
	if _, err := ex.Inspect(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sh.calls, "release GPU-1 0123456789abcdef") {
		t.Errorf("sharer calls %v; want the share released once the container ended", sh.calls)
	}
}

// TestShareWithoutMPS: where there is no MPS, or the GPUs are simulated,
// a share is time-sliced: nothing is mounted, no MPS variable is set, and
// the capabilities say so.
func TestShareWithoutMPS(t *testing.T) {
	for _, cfg := range []ExecutorConfig{{}, {SimulatedGPUs: true, MPS: newSharer()}} {
		f := &fakeDocker{start: func(string) error { return nil }, state: &container.State{Running: true, Status: "running"}}
		ex := NewExecutor(fakeRuntime(DefaultConfig(), f), cfg)
		if ex.Capabilities().MPS {
			t.Errorf("%+v: capabilities say MPS", cfg)
		}
		if _, err := ex.Start(context.Background(), shareTask()); err != nil {
			t.Fatal(err)
		}
		for _, e := range f.config.Env {
			if strings.HasPrefix(e, "CUDA_MPS_") {
				t.Errorf("%+v: env %s set without MPS", cfg, e)
			}
		}
		if len(f.created.Mounts) != 0 || f.created.IpcMode != container.IPCModePrivate {
			t.Errorf("%+v: mounts %v ipc %q", cfg, f.created.Mounts, f.created.IpcMode)
		}
	}
}

// TestShareStartFailsReleases: a container that does not start gives its
// share back; a daemon that cannot serve fails the start, naming the job.
func TestShareStartFailsReleases(t *testing.T) {
	f := &fakeDocker{start: func(string) error { return errors.New("no such image") }}
	sh := newSharer()
	ex := NewExecutor(fakeRuntime(DefaultConfig(), f), ExecutorConfig{MPS: sh})
	if _, err := ex.Start(context.Background(), shareTask()); err == nil {
		t.Fatal("Start succeeded")
	}
	if !slices.Contains(sh.calls, "release GPU-1 0123456789abcdef") {
		t.Errorf("sharer calls %v; want the share released", sh.calls)
	}
	sh.acquire = func(string, string, float64, uint64) (mps.Client, error) {
		return mps.Client{}, errors.New("daemon down")
	}
	if _, err := ex.Start(context.Background(), shareTask()); err == nil || !strings.Contains(err.Error(), "0123456789abcdef") {
		t.Errorf("Start with the daemon down = %v", err)
	}
	two := shareTask()
	two.GPUs = []string{"GPU-1", "GPU-2"}
	if _, err := ex.Start(context.Background(), two); err == nil {
		t.Error("a share of two GPUs started")
	}
}

// TestShareOtherUserRefused: a share whose processes would run as a user
// other than the one the daemon's directories belong to would reach no
// daemon and run uncapped: its start is refused, before any MPS call.
func TestShareOtherUserRefused(t *testing.T) {
	f := &fakeDocker{start: func(string) error { return nil }}
	sh := newSharer()
	ex := NewExecutor(fakeRuntime(DefaultConfig(), f), ExecutorConfig{MPS: sh})
	task := shareTask()
	task.Container.User = "1000:1000"
	if _, err := ex.Start(context.Background(), task); err == nil || !strings.Contains(err.Error(), DefaultJobUser) {
		t.Fatalf("Start as 1000:1000 = %v; want refused, naming the jobs' user", err)
	}
	if len(sh.calls) != 0 || len(f.calls) != 0 {
		t.Errorf("calls made: sharer %v docker %v", sh.calls, f.calls)
	}
	remapped := fakeRuntime(DefaultConfig(), f)
	remapped.remap = true
	if _, err := NewExecutor(remapped, ExecutorConfig{MPS: sh}).Start(context.Background(), shareTask()); err == nil {
		t.Error("a share started on an engine that remaps users")
	}
}

// TestShareAdoptedAfterRestart: the first list after the agent restarts
// takes back the shares of running containers (their GPU and partition as
// labelled), then sweeps the daemons that serve none; later lists do not
// sweep again.
func TestShareAdoptedAfterRestart(t *testing.T) {
	f := &fakeDocker{state: &container.State{Running: true, Status: "running"}, listed: []container.Summary{{ID: "c1"}},
		labels: map[string]string{LabelManaged: "true", LabelJob: "j1", LabelMPSGPU: "GPU-1", LabelMPSPartition: "GPU-1/p1"}}
	sh := newSharer()
	ex := NewExecutor(fakeRuntime(DefaultConfig(), f), ExecutorConfig{MPS: sh})
	for range 2 {
		if _, err := ex.List(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"adopt GPU-1 j1 GPU-1/p1", "sweep", "adopt GPU-1 j1 GPU-1/p1"}
	if !slices.Equal(sh.calls, want) {
		t.Errorf("sharer calls %v; want %v", sh.calls, want)
	}
}
