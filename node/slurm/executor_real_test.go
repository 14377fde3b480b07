//go:build linux

package slurm

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// These tests run the executor against the real Slurm of needSlurm: two
// nodes of 4 fake GPUs each. They run one after the other, and each
// cancels what it started.

func newRealExecutor(t *testing.T, c *slurmtest.Cluster) *Executor {
	t.Helper()
	e, err := New(context.Background(), realConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func start(t *testing.T, e *Executor, task jobs.Task) jobs.TaskStatus {
	t.Helper()
	if task.Owner == "" {
		task.Owner = "DEV1"
	}
	st, err := e.Start(context.Background(), task)
	if err != nil {
		t.Fatalf("Start(%s): %v", task.ID, err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background(), st.Handle, 0) })
	return st
}

// waitState polls the executor each tick until the job reaches a state
// for which ok holds (30 s at most).
func waitState(t *testing.T, e *Executor, handle string, ok func(jobs.TaskStatus) bool) jobs.TaskStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var st jobs.TaskStatus
	var err error
	for time.Now().Before(deadline) {
		st, err = e.Inspect(context.Background(), handle)
		if err == nil && ok(st) {
			return st
		}
		time.Sleep(e.cfg.Tick)
	}
	t.Fatalf("job %s: last %+v, %v", handle, st, err)
	return st
}

func ended(st jobs.TaskStatus) bool   { return st.State.Ended() }
func running(st jobs.TaskStatus) bool { return st.State == jobs.TaskRunning }

func output(t *testing.T, e *Executor, handle string) string {
	t.Helper()
	rc, err := e.Logs(context.Background(), handle, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRealGPUs: a command job with 2 GPUs sees two GPU indices.
func TestRealGPUs(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	st := start(t, e, jobs.Task{ID: "gpus2", Name: "gpus", Cmd: []string{"sh", "-c", `echo "CVD=$CUDA_VISIBLE_DEVICES FOO=$FOO"`},
		Env: []string{"FOO=bar baz"}, Resources: jobs.Resources{GPUs: 2}})
	if st.State != jobs.TaskPending || st.JobID != "gpus2" {
		t.Errorf("Start = %+v", st)
	}
	st = waitState(t, e, st.Handle, ended)
	if st.State != jobs.TaskExited || st.ExitCode != 0 || st.Finished.IsZero() {
		t.Errorf("ended as %+v", st)
	}
	out := output(t, e, st.Handle)
	if !regexp.MustCompile(`(?m)^CVD=\d+,\d+ FOO=bar baz$`).MatchString(out) {
		t.Errorf("output %q, want two GPU indices and FOO", out)
	}
}

// TestRealExitCode: a job's exit code comes back.
func TestRealExitCode(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	st := start(t, e, jobs.Task{ID: "exit3", Cmd: []string{"sh", "-c", "exit 3"}})
	st = waitState(t, e, st.Handle, ended)
	if st.State != jobs.TaskExited || st.ExitCode != 3 {
		t.Errorf("ended as %+v, want exited 3", st)
	}
}

// TestRealPendingThenRuns: a job asking more GPUs than are free waits
// with Slurm's reason, and runs when they free up; stop cancels.
func TestRealPendingThenRuns(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	sleep := []string{"sleep", "300"}
	a := start(t, e, jobs.Task{ID: "holdA", Cmd: sleep, Resources: jobs.Resources{GPUs: 4}})
	b := start(t, e, jobs.Task{ID: "holdB", Cmd: sleep, Resources: jobs.Resources{GPUs: 4}})
	waitState(t, e, a.Handle, running)
	waitState(t, e, b.Handle, running)
	w := start(t, e, jobs.Task{ID: "waits", Cmd: sleep, Resources: jobs.Resources{GPUs: 2}})
	st := waitState(t, e, w.Handle, func(st jobs.TaskStatus) bool { return st.State == jobs.TaskPending && st.Reason != "" })
	if st.Reason != "Resources" && st.Reason != "Priority" {
		t.Errorf("pending reason %q", st.Reason)
	}
	cl, err := e.ReadCluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cl.Running < 2 || cl.Pending < 1 || len(cl.GPUs) != 1 || cl.GPUs[0].Alloc != 8 {
		t.Errorf("cluster while full: running %d pending %d GPUs %+v", cl.Running, cl.Pending, cl.GPUs)
	}
	if err := e.Stop(context.Background(), a.Handle, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if st := waitState(t, e, a.Handle, ended); st.State != jobs.TaskCancelled {
		t.Errorf("stopped job is %+v, want cancelled", st)
	}
	st = waitState(t, e, w.Handle, running)
	if len(st.Hosts) != 1 {
		t.Fatalf("running job hosts %v", st.Hosts)
	}
	if n, ok := c.Node(st.Hosts[0]); !ok || st.Addr != n.Addr {
		t.Errorf("running job on %v has addr %q, want its node's %q", st.Hosts, st.Addr, n.Addr)
	}
	// squeue agrees.
	out, err := realRunner(c).Run(context.Background(), "squeue", "--noheader", "--format=%i %T", "--states=all", "--jobs="+a.Handle)
	if err != nil || !strings.Contains(string(out), "CANCELLED") {
		t.Errorf("squeue says %q, %v", out, err)
	}
}

// TestRealMultiNode: --nodes 2 with 2 GPUs per node runs on both nodes.
func TestRealMultiNode(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	st := start(t, e, jobs.Task{ID: "multi", Cmd: []string{"sh", "-c", `echo "$SLURMD_NODENAME CVD=$CUDA_VISIBLE_DEVICES"`},
		Resources: jobs.Resources{Nodes: 2, GPUsPerNode: 2}})
	st = waitState(t, e, st.Handle, ended)
	if st.State != jobs.TaskExited || strings.Join(st.Hosts, ",") != c.Nodes[0].Name+","+c.Nodes[1].Name {
		t.Errorf("ended as %+v, want on %v", st, c.Nodes)
	}
	out := output(t, e, st.Handle)
	for _, n := range c.Nodes {
		if !regexp.MustCompile(`(?m)^` + n.Name + ` CVD=\d+,\d+$`).MatchString(out) {
			t.Errorf("output %q: no line of %s with two GPUs", out, n.Name)
		}
	}
}

// TestRealAdopt: an executor restarted on the same state directory finds
// the running job without submitting again; one with no state adopts
// nothing (a job's comment is no proof that labpool submitted it).
func TestRealAdopt(t *testing.T) {
	c := needSlurm(t)
	cfg := realConfig(t, c)
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := start(t, e, jobs.Task{ID: "adoptme", Cmd: []string{"sleep", "300"}, Ports: []int{8888}, Labels: map[string]string{"labpool.job": "adoptme"}})
	waitState(t, e, st.Handle, running)
	again, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	fresh := newRealExecutor(t, c)
	for name, ex := range map[string]*Executor{"same state": again, "no state": fresh} {
		list, err := ex.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, got := range list {
			if got.Handle == st.Handle {
				found++
				if got.JobID != "adoptme" || got.State != jobs.TaskRunning {
					t.Errorf("%s: adopted %+v", name, got)
				}
				if name == "same state" && (got.Labels["labpool.job"] != "adoptme" || got.Ports[8888] != 8888) {
					t.Errorf("%s: labels %v ports %v", name, got.Labels, got.Ports)
				}
			}
		}
		if want := map[string]int{"same state": 1, "no state": 0}[name]; found != want {
			t.Errorf("%s: job %s listed %d times, want %d", name, st.Handle, found, want)
		}
	}
	if err := again.Stop(context.Background(), st.Handle, 0); err != nil {
		t.Fatal(err)
	}
	waitState(t, again, st.Handle, ended)
	if err := again.Remove(context.Background(), st.Handle); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Inspect(context.Background(), st.Handle); !jobs.IsTaskGone(err) {
		t.Errorf("Inspect after Remove: %v", err)
	}
	a, err := again.account(cfg.JobUser)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(a.outDir(), "slurm-"+st.Handle+".out")); !os.IsNotExist(err) {
		t.Errorf("output file after Remove: %v", err)
	}
}

// TestRealInjection: hostile names and commands go through sbatch and
// the batch shell as data.
func TestRealInjection(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	a, err := e.account(e.cfg.JobUser)
	if err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(a.Home, "INJECTED") // where the job may write
	handles := make([]string, len(hostile))
	for i, h := range hostile {
		h = strings.ReplaceAll(h, "INJECTED", canary)
		handles[i] = start(t, e, jobs.Task{ID: "inj" + string(rune('a'+i)), Name: h,
			Cmd: []string{"printf", "[%s]\n", h}, Env: []string{"H=" + h}}).Handle
	}
	for i, h := range hostile {
		h = strings.ReplaceAll(h, "INJECTED", canary)
		waitState(t, e, handles[i], ended)
		if out := output(t, e, handles[i]); out != "["+h+"]\n" {
			t.Errorf("case %d: output %q, want %q", i, out, "["+h+"]\n")
		}
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("a hostile string ran a command")
	}
}

// TestRealEvents: Events reports a job's changes within a tick or two.
func TestRealEvents(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, _ := e.Events(ctx)
	st := start(t, e, jobs.Task{ID: "events", Cmd: []string{"true"}})
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-evs:
			if ev.Handle != st.Handle {
				continue
			}
			if got, _ := e.Inspect(ctx, ev.Handle); got.State.Ended() {
				if ev.JobID != "events" || ev.Action != "state" {
					t.Errorf("event %+v", ev)
				}
				return
			}
		case <-deadline:
			t.Fatal("no event of the job's end in 30 s")
		}
	}
}

// TestRealFollowLogs: Logs with follow returns what the job writes until
// it ends.
func TestRealFollowLogs(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	st := start(t, e, jobs.Task{ID: "follow", Cmd: []string{"sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.3; done"}})
	rc, err := e.Logs(context.Background(), st.Handle, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != "line1\nline2\nline3\n" {
		t.Errorf("followed %q, %v", b, err)
	}
	tail, err := e.Logs(context.Background(), st.Handle, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Close()
	if b, _ := io.ReadAll(tail); string(b) != "line3\n" {
		t.Errorf("tail 1 = %q", b)
	}
}

// TestRealCluster: the card lists both nodes with their GPUs and their
// own addresses, and both partitions.
func TestRealCluster(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	if err := Detect(context.Background(), realRunner(c)); err != nil {
		t.Fatal(err)
	}
	cl, err := e.ReadCluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cl.Name != c.Name || !strings.HasPrefix(cl.Version, "22.05") || len(cl.Nodes) != len(c.Nodes) || len(cl.Partitions) != 2 ||
		len(cl.GPUs) != 1 || cl.GPUs[0].Type != c.Type || cl.GPUs[0].Total != len(c.Nodes)*c.GPUs {
		t.Errorf("cluster = %+v", cl)
	}
	for i, n := range cl.Nodes {
		if i < len(c.Nodes) && (n.Name != c.Nodes[i].Name || n.Addr != c.Nodes[i].Addr) {
			t.Errorf("node %d is %s at %s, want %s at %s", i, n.Name, n.Addr, c.Nodes[i].Name, c.Nodes[i].Addr)
		}
	}
	for _, p := range cl.Partitions {
		if p.Default != (p.Name == "gpu") {
			t.Errorf("partition %s: default %v, want only gpu", p.Name, p.Default)
		}
	}
}
