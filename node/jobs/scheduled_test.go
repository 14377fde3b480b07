package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// clusterManager runs a manager over a fake executor that schedules (a
// Slurm cluster: command jobs, several nodes), on a submit host without
// GPUs; its new tasks wait with Slurm's reason "Resources".
func clusterManager(t *testing.T) (*Manager, *fakeRuntime, *memStore) {
	t.Helper()
	rt := newFakeRuntime()
	rt.caps, rt.pending = slurmCaps, "Resources"
	st := &memStore{}
	return newTestManager(t, rt, 0, st), rt, st
}

// TestScheduledSubmit: where the executor schedules, Submit hands the job
// over at once with its resources, keeps no ledger entry and no queue of
// its own; the job follows the backend: queued with its reason, running on
// its hosts, ended with its code and outcome.
func TestScheduledSubmit(t *testing.T) {
	m, rt, _ := clusterManager(t)
	ctx := context.Background()
	spec := Spec{Cmd: []string{"sh", "-c", "echo $CUDA_VISIBLE_DEVICES"}, Env: []string{"A=1"}, GPUs: 2, CPUs: 4,
		MemoryBytes: 16 << 30, Partition: "gpu", TimeLimitSeconds: 7200, Ports: []int{8888}}
	j, err := m.Submit(ctx, member("alice"), spec)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != Queued || j.Error != "queued by the cluster's scheduler: Resources" || j.Executor != "slurm" || j.Container == "" {
		t.Errorf("submitted job %+v, want queued with Slurm's reason", j)
	}
	if n := rt.count("Start"); n != 1 {
		t.Errorf("%d starts, want 1 at once", n)
	}
	task := rt.lastLaunch()
	want := Resources{CPUs: 4, MemoryBytes: 16 << 30, GPUs: 2, TimeLimit: 2 * time.Hour, Partition: "gpu"}
	if task.Resources != want || len(task.GPUs) != 0 || task.Image != "" || !slices.Equal(task.Cmd, spec.Cmd) || task.Labels[LabelJob] != j.ID {
		t.Errorf("task %+v, want resources %+v and no GPU grant", task, want)
	}
	if g := m.Ledger().Granted(); len(g) != 0 {
		t.Errorf("the ledger holds %v for a cluster job", g)
	}
	if q := m.queued(); len(q) != 0 {
		t.Errorf("the local queue holds %v", q)
	}
	rt.set(j.Container, TaskRunning, 0, "node1", "node2")
	j = waitState(t, m, j.ID, Running)
	if !slices.Equal(j.Hosts, []string{"node1", "node2"}) || j.Error != "" || j.Started == nil || j.Ports[8888] == 0 {
		t.Errorf("running job %+v", j)
	}
	rt.exit(j.Container, 0)
	if j = waitState(t, m, j.ID, Exited); *j.ExitCode != 0 || j.Outcome != "" {
		t.Errorf("ended job %+v", j)
	}
	for _, tt := range []struct {
		state   TaskState
		code    int
		outcome string
		err     string
	}{
		{TaskExited, 3, "", "exited with code 3"},
		{TaskTimedOut, 0, "timed_out", "reached its time limit"},
		{TaskCancelled, 0, "cancelled", "cancelled outside labpool"},
	} {
		k, err := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		rt.set(k.Container, tt.state, tt.code)
		k = waitState(t, m, k.ID, Failed)
		if *k.ExitCode != tt.code || k.Outcome != tt.outcome || k.Error != tt.err {
			t.Errorf("%s: job ended %+v, want code %d outcome %q error %q", tt.state, k, tt.code, tt.outcome, tt.err)
		}
	}
}

// TestScheduledStopPending: stopping a job the cluster still queues
// cancels it there.
func TestScheduledStopPending(t *testing.T) {
	m, rt, _ := clusterManager(t)
	ctx := context.Background()
	j, err := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	j, err = m.Stop(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rt.count("Stop") != 1 || j.State != Exited || j.Outcome != "cancelled" || j.Error != stoppedByUser {
		t.Errorf("stopped queued job %+v after %d stops, want exited, cancelled", j, rt.count("Stop"))
	}
	if err := m.Remove(ctx, j.ID, false); err != nil || rt.count("Remove") != 1 {
		t.Errorf("remove: %v, %d removes", err, rt.count("Remove"))
	}
}

// TestScheduledRefusals: what the cluster cannot run is refused, naming
// the rule, before it is asked anything; and a machine that schedules
// nothing refuses the cluster's options.
func TestScheduledRefusals(t *testing.T) {
	m, rt, _ := clusterManager(t)
	tests := []struct {
		spec Spec
		rule string
		msg  string
	}{
		{Spec{Image: "pytorch:24.10-py3", Cmd: []string{"python"}}, "command-jobs-only", "this cluster runs command jobs only: it has neither pyxis nor Apptainer"},
		{Spec{}, "cmd", "a job without an image runs a command"},
		{Spec{Cmd: []string{"x"}, GPUIDs: []int{0}}, "gpus", "places GPUs itself"},
		{Spec{Cmd: []string{"x"}, MIGIDs: []string{"MIG-1"}}, "gpus", "places GPUs itself"},
		{Spec{Cmd: []string{"x"}, ContainerSpec: ContainerSpec{User: "root"}}, "container-options", "runs no Docker container"},
		{Spec{Cmd: []string{"x"}, ContainerSpec: ContainerSpec{Privileged: true}}, "container-options", "runs no Docker container"},
		{Spec{Cmd: []string{"x"}, Nodes: 2, GPUs: 1}, "gpus", "not both"},
		{Spec{Cmd: []string{"x"}, GPUsPerNode: 2}, "gpus", "go with nodes"},
		{Spec{Cmd: []string{"x"}, Partition: "gpu;rm -rf"}, "partition", "not a partition name"},
		{Spec{Cmd: []string{"x"}, TimeLimitSeconds: -1}, "time-limit", "out of range"},
		{Spec{Cmd: []string{"x"}, Env: []string{"NVIDIA_VISIBLE_DEVICES=all"}}, "no-gpu-env", "NVIDIA_VISIBLE_DEVICES"},
	}
	for _, tt := range tests {
		_, err := m.Submit(context.Background(), member("alice"), tt.spec)
		var re *RefusedError
		if !errors.As(err, &re) || re.Rule != tt.rule || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Submit(%+v) = %v, want rule %q saying %q", tt.spec, err, tt.rule, tt.msg)
		}
	}
	if _, err := m.Submit(context.Background(), member("alice"), Spec{Cmd: []string{"x"}, Nodes: 2, GPUsPerNode: 4}); err != nil {
		t.Errorf("a multi-node job refused: %v", err)
	}
	if n := rt.count("Start"); n != 1 {
		t.Errorf("%d starts, want only the good job's", n)
	}
	docker := newTestManager(t, newFakeRuntime(), 2, &memStore{})
	for _, tt := range []struct {
		spec Spec
		rule string
	}{
		{Spec{Image: "img", Nodes: 2, GPUsPerNode: 1}, "multi-node"},
		{Spec{Image: "img", Partition: "gpu"}, "cluster-options"},
		{Spec{Image: "img", TimeLimitSeconds: -1}, "time-limit"}, // a time limit is a container's too (deadline.go)
		{Spec{Image: "img", TimeLimitSeconds: 400 * 24 * 3600}, "time-limit"},
		{Spec{Cmd: []string{"hostname"}}, "image-ref"},
	} {
		var re *RefusedError
		if _, err := docker.Submit(context.Background(), member("alice"), tt.spec); !errors.As(err, &re) || re.Rule != tt.rule {
			t.Errorf("Docker: Submit(%+v) = %v, want rule %q", tt.spec, err, tt.rule)
		}
	}
}

// TestScheduledPolicy: the machine's policy holds for the cluster it
// stands for: a member the launch policy keeps out is refused before the
// cluster is asked, and GPUs per member count every node's.
func TestScheduledPolicy(t *testing.T) {
	m, rt, _ := clusterManager(t)
	p := m.Policy()
	p.Launch, p.MaxGPUsPerMember = LaunchAdmins, 4
	if err := m.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var re *RefusedError
	if _, err := m.Submit(ctx, member("bob"), Spec{Cmd: []string{"x"}}); !errors.As(err, &re) || re.Rule != "policy launch=admins" {
		t.Errorf("a member under launch=admins: %v", err)
	}
	if _, err := m.Submit(ctx, admin("ada"), Spec{Cmd: []string{"x"}, Nodes: 2, GPUsPerNode: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Submit(ctx, admin("ada"), Spec{Cmd: []string{"x"}, GPUs: 1}); !errors.As(err, &re) || re.Rule != "policy max-gpus-per-member=4" {
		t.Errorf("a fifth GPU: %v", err)
	}
	if n := rt.count("Start"); n != 1 {
		t.Errorf("%d starts, want the admin's first job's only", n)
	}
	if j := m.List()[0]; j.Spec.MemoryBytes != 0 {
		t.Errorf("a cluster job got this host's default memory: %d", j.Spec.MemoryBytes)
	}
}

// TestScheduledAdopt: a restarted agent adopts its cluster jobs, queued or
// running, by their job ID, and submits nothing again; a job the cluster
// forgot fails.
func TestScheduledAdopt(t *testing.T) {
	m, rt, st := clusterManager(t)
	ctx := context.Background()
	queued, _ := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"a"}})
	running, _ := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"b"}, GPUs: 1})
	lost, _ := m.Submit(ctx, member("bob"), Spec{Cmd: []string{"c"}})
	rt.set(running.Container, TaskRunning, 0, "node2")
	waitState(t, m, running.ID, Running)
	rt.mu.Lock()
	delete(rt.cs, lost.Container) // purged from the cluster while the agent was down
	rt.mu.Unlock()
	starts := rt.count("Start")

	again := rt.again()
	m2 := newTestManager(t, again, 0, st)
	if j, _ := m2.Get(queued.ID); j.State != Queued || j.Container != queued.Container || !strings.Contains(j.Error, "Resources") {
		t.Errorf("queued job after a restart: %+v", j)
	}
	if j, _ := m2.Get(running.ID); j.State != Running || !slices.Equal(j.Hosts, []string{"node2"}) {
		t.Errorf("running job after a restart: %+v", j)
	}
	if j, _ := m2.Get(lost.ID); j.State != Failed || !strings.Contains(j.Error, "slurm job is gone") {
		t.Errorf("lost job after a restart: %+v", j)
	}
	if n := rt.count("Start"); n != starts {
		t.Errorf("the restarted agent submitted %d jobs again", n-starts)
	}
	if g := m2.Ledger().Granted(); len(g) != 0 {
		t.Errorf("the ledger holds %v after adopting cluster jobs", g)
	}
}

// TestScheduledTunnel: a tunnel reaches a port of a running cluster job at
// the address its executor reports, only the ports it declared, and none
// while it waits in the cluster's queue.
func TestScheduledTunnel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.WriteString(c, "jupyter on the cluster")
		c.Close()
	}()
	m, rt, _ := clusterManager(t)
	srv := trustServer(t, m)
	code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs", `{"cmd":["jupyter"],"ports":[8888]}`)
	var j Job
	if code != 200 || json.Unmarshal([]byte(body), &j) != nil {
		t.Fatalf("submit: %d %s", code, body)
	}
	if code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs/"+j.ID+"/tunnel?port=8888", ""); code != 409 || !strings.Contains(body, "no_port") {
		t.Errorf("tunnel to a queued job = %d %s, want 409 no_port", code, body)
	}
	rt.set(j.Container, TaskRunning, 0, "node1")
	waitState(t, m, j.ID, Running)
	rt.mu.Lock()
	rt.cs[j.Container].Ports[8888] = ln.Addr().(*net.TCPAddr).Port // the compute node's port
	rt.mu.Unlock()
	if code, body := call(t, srv, member("bob"), "POST", "/v1/jobs/"+j.ID+"/tunnel?port=8888", ""); code != 403 {
		t.Errorf("another member's tunnel = %d %s, want 403", code, body)
	}
	if code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs/"+j.ID+"/tunnel?port=22", ""); code != 409 || !strings.Contains(body, "no_port") {
		t.Errorf("tunnel to an undeclared port = %d %s, want 409 no_port", code, body)
	}
	if code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs/"+j.ID+"/tunnel?port=8888", ""); code != 200 || body != "jupyter on the cluster" {
		t.Errorf("tunnel = %d %q, want the job's answer", code, body)
	}
}

// TestScheduledEvict: the jobs of a member removed from the pool end on the
// cluster too, those still in its queue included: none runs on after.
func TestScheduledEvict(t *testing.T) {
	m, rt, _ := clusterManager(t)
	ctx := context.Background()
	queued, _ := m.Submit(ctx, member("bob"), Spec{Cmd: []string{"a"}})
	running, _ := m.Submit(ctx, member("bob"), Spec{Cmd: []string{"b"}})
	rt.set(running.Container, TaskRunning, 0, "node1")
	waitState(t, m, running.ID, Running)
	if _, _, err := m.Evict(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{queued.Container, running.Container} {
		if st, _ := rt.Inspect(ctx, id); !st.State.Ended() {
			t.Errorf("task %s of an evicted member is %s on the cluster", id, st.State)
		}
	}
	for _, id := range []string{queued.ID, running.ID} {
		if j, _ := m.Get(id); j.State != Exited || j.Error != evicted {
			t.Errorf("evicted job %+v", j)
		}
	}
}

// TestScheduledResyncListsOnce: the periodic re-read of a cluster's jobs
// is one List of the backend, not one Inspect per job, and it catches
// changes no event told.
func TestScheduledResyncListsOnce(t *testing.T) {
	m, rt, _ := clusterManager(t)
	ctx := context.Background()
	var js []Job
	for range 20 {
		j, err := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, j)
	}
	rt.mu.Lock()
	for _, j := range js { // started without a word
		rt.cs[j.Container].State, rt.cs[j.Container].Started = TaskRunning, time.Now()
	}
	rt.inspects = 0
	rt.mu.Unlock()
	lists := rt.count("List")
	m.resync(ctx)
	for _, j := range js {
		if got, _ := m.Get(j.ID); got.State != Running {
			t.Errorf("job %s is %s after a resync, want running", j.ID, got.State)
		}
	}
	rt.mu.Lock()
	inspects := rt.inspects
	rt.mu.Unlock()
	if n := rt.count("List") - lists; n != 1 || inspects != 0 {
		t.Errorf("a resync of 20 cluster jobs made %d lists and %d inspects, want 1 and 0", n, inspects)
	}
}

// TestAdoptTwoClaimants: a task that claims a job it is not (a cluster
// job whose comment names another member's job) never takes the job
// over at a restart, whatever order the executor lists them in: the task
// the job's record names stays the job's.
func TestAdoptTwoClaimants(t *testing.T) {
	m, rt, st := clusterManager(t)
	ctx := context.Background()
	victim, err := m.Submit(ctx, member("alice"), Spec{Cmd: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}
	rt.set(victim.Container, TaskRunning, 0, "node1")
	waitState(t, m, victim.ID, Running)
	rt.mu.Lock()
	rt.cs["forged"] = &TaskStatus{Handle: "forged", JobID: victim.ID, State: TaskRunning,
		Labels: map[string]string{LabelJob: victim.ID}, Hosts: []string{"node2"}}
	rt.mu.Unlock()
	for i := range 16 { // the fake lists its tasks in a map's order
		m2 := newTestManager(t, rt.again(), 0, st)
		if j, _ := m2.Get(victim.ID); j.Container != victim.Container || j.State != Running {
			t.Fatalf("restart %d: the job is task %s (%s), want %s", i, j.Container, j.State, victim.Container)
		}
	}
}
