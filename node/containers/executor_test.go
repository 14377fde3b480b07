package containers

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// TestExecutorLaunch: what Docker is asked for a task: its resources,
// folders, labels and options, with the grant pinned for the NVIDIA
// runtime ("void" when none), and no device request where GPUs are
// simulated.
func TestExecutorLaunch(t *testing.T) {
	e := NewExecutor(nil, ExecutorConfig{})
	task := jobs.Task{ID: "0123456789abcdef", Name: "train", Owner: "OWNER", Image: "img:1", Cmd: []string{"python", "train.py"},
		Env: []string{"A=1"}, GPUs: []string{"GPU-1", "GPU-3"}, Ports: []int{8888, 6006},
		Resources: jobs.Resources{CPUs: 4, MemoryBytes: 8 << 30},
		Mounts:    []jobs.TaskMount{{HostPath: "/srv/data", Target: "/data"}, {HostPath: "/srv/ro", Target: "/ro", ReadOnly: true}},
		Labels:    map[string]string{LabelJob: "0123456789abcdef", LabelOwner: "OWNER"},
		Container: jobs.ContainerOptions{User: "1000:1000", ShmBytes: 1 << 30, Restart: "on-failure", Network: NetIsolated, LogMaxBytes: 1 << 20}}
	l := e.launch(task)
	if l.Name != "labpool-train-012345" || l.Image != "img:1" || !slices.Equal(l.Cmd, task.Cmd) || !slices.Equal(l.GPUs, task.GPUs) {
		t.Errorf("launch %+v", l)
	}
	if !slices.Equal(l.Env, []string{"A=1", "NVIDIA_VISIBLE_DEVICES=GPU-1,GPU-3"}) {
		t.Errorf("env %v, want the grant pinned", l.Env)
	}
	if l.CPUs != 4 || l.MemoryBytes != 8<<30 || l.ShmBytes != 1<<30 || l.Restart != "on-failure" || l.Network != NetIsolated ||
		l.User != "1000:1000" || l.AllowRoot || l.LogMaxBytes != 1<<20 || !slices.Equal(l.Ports, task.Ports) {
		t.Errorf("launch options %+v", l)
	}
	wantBinds := []Bind{{HostPath: "/srv/data", Target: "/data"}, {HostPath: "/srv/ro", Target: "/ro", ReadOnly: true}}
	if !slices.Equal(l.Binds, wantBinds) || l.Labels[LabelJob] != task.ID || l.Labels[LabelOwner] != "OWNER" {
		t.Errorf("binds %+v labels %v", l.Binds, l.Labels)
	}
	l.Labels["x"] = "y"
	if _, ok := task.Labels["x"]; ok {
		t.Error("the launch shares the task's labels")
	}
	task.GPUs = nil
	if l := e.launch(task); !slices.Contains(l.Env, "NVIDIA_VISIBLE_DEVICES=void") || len(l.GPUs) != 0 {
		t.Errorf("a task without GPUs: env %v GPUs %v", l.Env, l.GPUs)
	}
	task.GPUs = []string{"GPU-1"}
	sim := NewExecutor(nil, ExecutorConfig{SimulatedGPUs: true})
	if l := sim.launch(task); !slices.Contains(l.Env, "NVIDIA_VISIBLE_DEVICES=GPU-1") || l.GPUs != nil {
		t.Errorf("simulated GPUs: env %v GPUs %v", l.Env, l.GPUs)
	}
}

// TestExecutorStatus: container states as the manager reads them.
func TestExecutorStatus(t *testing.T) {
	e := NewExecutor(nil, ExecutorConfig{})
	e.stopped["stopped"] = true
	now := time.Now()
	tests := []struct {
		name   string
		c      Container
		want   jobs.TaskState
		code   int
		oom    bool
		reason string
	}{
		{"running", Container{ID: "a", Running: true, State: "running"}, jobs.TaskRunning, 0, false, ""},
		{"restarting", Container{ID: "a", State: "restarting"}, jobs.TaskRunning, 0, false, ""},
		{"created", Container{ID: "a", State: "created"}, jobs.TaskPending, 0, false, "created, not started"},
		{"exit 0", Container{ID: "a", State: "exited"}, jobs.TaskExited, 0, false, ""},
		{"exit 3", Container{ID: "a", State: "exited", ExitCode: 3}, jobs.TaskExited, 3, false, ""},
		{"oom", Container{ID: "a", State: "exited", ExitCode: 137, OOMKilled: true}, jobs.TaskFailed, 137, true, ""},
		{"start error", Container{ID: "a", State: "exited", ExitCode: 128, Error: "no such file"}, jobs.TaskFailed, 128, false, "no such file"},
		{"stopped by the manager", Container{ID: "stopped", State: "exited", ExitCode: 143}, jobs.TaskCancelled, 143, false, ""},
		{"dead", Container{ID: "a", State: "dead", ExitCode: 1}, jobs.TaskFailed, 1, false, "the engine marked its container dead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Labels, tt.c.Started = map[string]string{LabelJob: "j1"}, now
			s := e.status(tt.c)
			if s.State != tt.want || s.ExitCode != tt.code || s.OOM != tt.oom || s.Reason != tt.reason || s.JobID != "j1" || s.Handle != tt.c.ID {
				t.Errorf("status %+v, want %s code %d oom %v reason %q", s, tt.want, tt.code, tt.oom, tt.reason)
			}
		})
	}
}

// TestRefusedBeforeAnyDockerCall: a job manager over the Docker executor
// refuses every dangerous spec, naming the rule, before any Docker call.
func TestRefusedBeforeAnyDockerCall(t *testing.T) {
	f := &fakeDocker{}
	ex := NewExecutor(fakeRuntime(DefaultConfig(), f), ExecutorConfig{})
	m := jobs.NewManager(jobs.Config{Node: "NODE"}, ex, noGPUs{}, nil, &jobStore{}, discardLog())
	tests := []struct {
		spec jobs.ContainerSpec
		rule string
	}{
		{jobs.ContainerSpec{Privileged: true}, "no-privileged"},
		{jobs.ContainerSpec{Binds: []string{"/:/h"}}, "shared-folders-only"},
		{jobs.ContainerSpec{CapAdd: []string{"SYS_ADMIN"}}, "no-extra-capabilities"},
		{jobs.ContainerSpec{NetworkMode: "host"}, "no-host-namespaces"},
		{jobs.ContainerSpec{PidMode: "host"}, "no-host-namespaces"},
		{jobs.ContainerSpec{PortBinds: []string{"0.0.0.0:80:80"}}, "loopback-ports-only"},
		{jobs.ContainerSpec{Devices: []string{"/dev/nvidia0"}}, "no-devices"},
		{jobs.ContainerSpec{SecurityOpt: []string{"seccomp=unconfined"}}, "no-security-opt"},
		{jobs.ContainerSpec{User: "root"}, "policy allow-root=false"},
		{jobs.ContainerSpec{User: "alice"}, "user"},
	}
	for _, tt := range tests {
		_, err := m.Submit(context.Background(), jobs.Caller{ID: "bob", Role: jobs.RoleMember}, jobs.Spec{Image: "img", ContainerSpec: tt.spec})
		var re *jobs.RefusedError
		if !errors.As(err, &re) || re.Rule != tt.rule {
			t.Errorf("Submit(%+v) = %v, want rule %q", tt.spec, err, tt.rule)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("refused specs made Docker calls: %v", f.calls)
	}
}
