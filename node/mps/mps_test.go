//go:build linux

package mps

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

const gpuA, gpuB = "GPU-aaaa-0001", "GPU-bbbb-0002"

// fake is a Daemons over the fake control program in testdata, and the
// log of what that program was told.
type fake struct {
	*Daemons
	log string
}

func newFake(t *testing.T, env ...string) fake {
	t.Helper()
	bin, err := filepath.Abs("testdata/nvidia-cuda-mps-control")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "calls")
	t.Setenv("FAKE_MPS_LOG", log)
	for i := 0; i+1 < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "mps"))
	cfg.Binary, cfg.PrivateShm = bin, false
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.quitAll)
	return fake{d, log}
}

// calls is what the fake was told, one call a line.
func (f fake) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (f fake) pid(t *testing.T, gpu string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir(gpu, "pipe"), pidFile))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func count(lines []string, part string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, part) {
			n++
		}
	}
	return n
}

// TestOneDaemonPerGPU: the first share of a GPU starts its daemon (on that
// GPU, with its own pipe directory), a second share reuses it, and the
// last to leave tells it to quit.
func TestOneDaemonPerGPU(t *testing.T) {
	f := newFake(t, "FAKE_MPS_NO_STATIC", "1")
	ctx := context.Background()
	a, err := f.Acquire(ctx, gpuA, "job1", 0.25, 20<<30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Acquire(ctx, gpuA, "job2", 0.5, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Acquire(ctx, gpuB, "job3", 0.5, 0); err != nil {
		t.Fatal(err)
	}
	calls := f.calls(t)
	if n := count(calls, gpuA+" "+f.dir(gpuA, "pipe")+" -d |"); n != 1 {
		t.Errorf("daemon of %s started %d times; want once:\n%s", gpuA, n, strings.Join(calls, "\n"))
	}
	if n := count(calls, gpuB+" "+f.dir(gpuB, "pipe")+" -d |"); n != 1 {
		t.Errorf("daemon of %s started %d times; want once", gpuB, n)
	}
	if a.PipeDir != f.dir(gpuA, "pipe") || a.ShmDir != f.dir(gpuA, "shm") || a.ThreadPercent != 25 || a.MemBytes != 20<<30 {
		t.Errorf("client = %+v", a)
	}
	pid := f.pid(t, gpuA)
	if err := f.Release(ctx, gpuA, "job1"); err != nil {
		t.Fatal(err)
	}
	if count(f.calls(t), "| quit") != 0 || !f.alive(gpuA) {
		t.Fatal("the daemon quit while a share was left on its GPU")
	}
	if err := f.Release(ctx, gpuA, "job2"); err != nil {
		t.Fatal(err)
	}
	if n := count(f.calls(t), gpuA+" "+f.dir(gpuA, "pipe")+" | quit"); n != 1 {
		t.Errorf("quit sent %d times to %s's daemon; want once", n, gpuA)
	}
	if syscall.Kill(pid, 0) == nil {
		waitGone(t, pid)
	}
	if got := f.Holders(); !reflect.DeepEqual(got, map[string][]string{gpuB: {"job3"}}) {
		t.Errorf("Holders = %v", got)
	}
	if err := f.Release(ctx, gpuA, "job2"); err != nil {
		t.Errorf("releasing twice: %v", err)
	}
}

// waitGone reaps nothing (the fake's sleep is not our child once its shell
// exits) but waits, boundedly, for the kill to land.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 1000 {
		if syscall.Kill(pid, 0) != nil || zombie(pid) {
			return
		}
		var ts syscall.Timespec
		ts.Nsec = 1e6
		syscall.Nanosleep(&ts, nil)
	}
	t.Errorf("daemon %d still runs after quit", pid)
}

// TestAcquireAgainIsTheSame: a holder that asks again (an agent adopting
// its running job) gets its share back, and no second one.
func TestAcquireAgainIsTheSame(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	a, err := f.Acquire(ctx, gpuA, "job1", 0.5, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Acquire(ctx, gpuA, "job1", 0.5, 0)
	if err != nil || a != b {
		t.Fatalf("again = %+v, %v; want %+v", b, err, a)
	}
	if n := count(f.calls(t), "sm_partition add"); n != 1 {
		t.Errorf("%d partitions made for one holder", n)
	}
}

// TestStaticPartitioning: where the daemon takes -S, a share gets its part
// of the GPU's chunks as a partition, removed when it leaves.
func TestStaticPartitioning(t *testing.T) {
	f := newFake(t, "FAKE_MPS_CHUNKS", "8")
	ctx := context.Background()
	a, err := f.Acquire(ctx, gpuA, "job1", 0.5, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Acquire(ctx, gpuA, "job2", 0.3, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.calls(t)
	if count(calls, " -d -S |") != 1 || count(calls, "sm_partition add "+gpuA+" 4") != 1 || count(calls, "sm_partition add "+gpuA+" 2") != 1 {
		t.Fatalf("calls:\n%s\nwant one -d -S start and partitions of 4 and 2 chunks", strings.Join(calls, "\n"))
	}
	if a.Partition != gpuA+"/p0" || b.Partition != gpuA+"/p4" {
		t.Errorf("partitions %q, %q", a.Partition, b.Partition)
	}
	if !slicesContain(a.Env(), EnvSMPartition+"="+gpuA+"/p0") {
		t.Errorf("Env = %v; want the partition", a.Env())
	}
	if err := f.Release(ctx, gpuA, "job1"); err != nil {
		t.Fatal(err)
	}
	if count(f.calls(t), "sm_partition rm "+gpuA+" "+gpuA+"/p0") != 1 {
		t.Errorf("the partition was not removed: %v", f.calls(t))
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestNoStaticFallsBack: a daemon that refuses -S starts without it, and
// its shares get thread percentages only.
func TestNoStaticFallsBack(t *testing.T) {
	f := newFake(t, "FAKE_MPS_NO_STATIC", "1")
	c, err := f.Acquire(context.Background(), gpuA, "job1", 0.5, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.calls(t)
	if count(calls, "-d -S |") != 1 || count(calls, " -d |") != 1 || count(calls, "sm_partition") != 0 {
		t.Errorf("calls:\n%s\nwant -d -S refused, then -d, and no partition", strings.Join(calls, "\n"))
	}
	if c.Partition != "" || c.ThreadPercent != 50 {
		t.Errorf("client = %+v", c)
	}
}

// TestCheckRestartsADeadDaemon: a daemon that died is started again; one
// that lives is left alone.
func TestCheckRestartsADeadDaemon(t *testing.T) {
	f := newFake(t, "FAKE_MPS_NO_STATIC", "1")
	ctx := context.Background()
	for _, g := range []string{gpuA, gpuB} {
		if _, err := f.Acquire(ctx, g, "job-"+g, 0.5, 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.Check(ctx); len(got) != 0 {
		t.Fatalf("Check with both alive restarted %v", got)
	}
	pid := f.pid(t, gpuA)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if got := f.Check(ctx); !reflect.DeepEqual(got, []string{gpuA}) {
		t.Fatalf("Check = %v; want %s restarted", got, gpuA)
	}
	if !f.alive(gpuA) || f.pid(t, gpuA) == pid {
		t.Error("the daemon is not running again")
	}
	if n := count(f.calls(t), gpuA+" "+f.dir(gpuA, "pipe")+" -d |"); n != 2 {
		t.Errorf("daemon of %s started %d times; want twice", gpuA, n)
	}
}

// TestRunLeavesDaemonsToTheirJobs: when the agent stops, the daemons
// keep serving the containers that outlive it; the next agent adopts the
// shares still running and sweeps the daemons that serve none.
func TestRunLeavesDaemonsToTheirJobs(t *testing.T) {
	f := newFake(t, "FAKE_MPS_NO_STATIC", "1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.Run(ctx) }()
	for _, g := range []string{gpuA, gpuB} {
		if _, err := f.Acquire(context.Background(), g, "job-"+g, 0.5, 0); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := count(f.calls(t), "| quit"); n != 0 || !f.alive(gpuA) || !f.alive(gpuB) {
		t.Fatalf("the agent's stop ended daemons that serve running jobs (%d quits)", n)
	}
	pidA := f.pid(t, gpuA)

	// The next agent: job-A still runs (adopted), job-B ended while away.
	next, err := New(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(next.quitAll)
	if err := next.Adopt(context.Background(), "job-"+gpuA, Client{GPU: gpuA}); err != nil {
		t.Fatal(err)
	}
	if err := next.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !next.alive(gpuA) || f.pid(t, gpuA) != pidA {
		t.Error("the adopted share's daemon was not kept")
	}
	if next.alive(gpuB) {
		t.Error("the daemon that serves no share was not swept")
	}
	if n := count(f.calls(t), gpuA+" "+f.dir(gpuA, "pipe")+" -d"); n != 2 { // -d -S refused, then -d: once
		t.Errorf("%s's daemon started again on adoption (%d start lines)", gpuA, n)
	}
	if err := next.Release(context.Background(), gpuA, "job-"+gpuA); err != nil || next.alive(gpuA) {
		t.Errorf("releasing the adopted share: %v, daemon alive %v", err, next.alive(gpuA))
	}
}

// TestDirectories: the pipe, shm and log directories are the clients'
// user's, 0700; the GPU's directory the agent's, 0700.
func TestDirectories(t *testing.T) {
	f := newFake(t)
	if os.Geteuid() == 0 {
		f.cfg.UID, f.cfg.GID = 4321, 4322
	}
	if _, err := f.Acquire(context.Background(), gpuA, "job", 0.5, 0); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir   string
		owned bool
	}{{filepath.Join(f.cfg.Dir, gpuA), false}, {f.dir(gpuA, "log"), true}, {f.dir(gpuA, "pipe"), true}, {f.dir(gpuA, "shm"), true}} {
		fi, err := os.Lstat(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 || !fi.IsDir() {
			t.Errorf("%s: mode %v; want a 0700 directory", tt.dir, fi.Mode())
		}
		st := fi.Sys().(*syscall.Stat_t)
		if want := uint32(os.Geteuid()); tt.owned && f.cfg.UID >= 0 {
			want = uint32(f.cfg.UID)
			if st.Uid != want || st.Gid != uint32(f.cfg.GID) {
				t.Errorf("%s: owned by %d:%d; want %d:%d", tt.dir, st.Uid, st.Gid, f.cfg.UID, f.cfg.GID)
			}
		} else if st.Uid != want {
			t.Errorf("%s: owned by %d; want %d", tt.dir, st.Uid, want)
		}
	}
}

// TestALinkIsNoDirectory: a link planted where a pipe directory goes is
// refused, never followed.
func TestALinkIsNoDirectory(t *testing.T) {
	f := newFake(t)
	if err := os.MkdirAll(filepath.Join(f.cfg.Dir, gpuA), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), f.dir(gpuA, "pipe")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Acquire(context.Background(), gpuA, "job", 0.5, 0); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Acquire over a link = %v; want refused", err)
	}
}

// TestNotAGPU: a GPU's name becomes a path: only a GPU UUID is taken.
func TestNotAGPU(t *testing.T) {
	f := newFake(t)
	for _, g := range []string{"../../etc", "GPU-a/../../x", "MIG-abc", "", "GPU-"} {
		if _, err := f.Acquire(context.Background(), g, "job", 0.5, 0); err == nil {
			t.Errorf("Acquire(%q) accepted", g)
		}
	}
	if c := f.calls(t); len(c) != 1 || c[0] != "" {
		t.Errorf("the control program ran: %v", c)
	}
}

// TestNoControlProgram: without nvidia-cuda-mps-control, New says so.
func TestNoControlProgram(t *testing.T) {
	cfg := DefaultConfig(t.TempDir())
	cfg.Binary = "no-such-nvidia-cuda-mps-control"
	if _, err := New(cfg); !errors.Is(err, ErrNoMPS) {
		t.Fatalf("New = %v; want ErrNoMPS", err)
	}
}

// TestPrivateShmIsTheShmDirectory: started as the agent starts it (root,
// unshare), the daemon's /dev/shm is its GPU's shm directory, the one
// clients mount as theirs; the host's /dev/shm is untouched.
func TestPrivateShmIsTheShmDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a mount namespace needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	f := newFake(t, "FAKE_MPS_NO_STATIC", "1")
	f.cfg.PrivateShm = true
	host := statID(t, "/dev/shm")
	if _, err := f.Acquire(context.Background(), gpuA, "job", 0.5, 0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(f.dir(gpuA, "pipe"), "devshm"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), statID(t, f.dir(gpuA, "shm")); got != want {
		t.Errorf("the daemon's /dev/shm is %s; want its shm directory, %s (the host's is %s)", got, want, host)
	}
	if statID(t, "/dev/shm") != host {
		t.Error("the host's /dev/shm changed")
	}
}

func statID(t *testing.T, p string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(st.Dev, 10) + ":" + strconv.FormatUint(st.Ino, 10)
}

// TestAcquireNeverWithoutADaemon: a share is given only while its GPU's
// daemon runs: one that died is started again first, and one that never
// comes up fails the share, saying so.
func TestAcquireNeverWithoutADaemon(t *testing.T) {
	f := newFake(t, "FAKE_MPS_NO_STATIC", "1")
	ctx := context.Background()
	if _, err := f.Acquire(ctx, gpuA, "job1", 0.25, 0); err != nil {
		t.Fatal(err)
	}
	pid := f.pid(t, gpuA)
	syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid)
	if _, err := f.Acquire(ctx, gpuA, "job2", 0.25, 0); err != nil {
		t.Fatal(err)
	}
	if !f.alive(gpuA) || f.pid(t, gpuA) == pid {
		t.Error("the second share was given while its daemon was dead")
	}

	dead := newFake(t, "FAKE_MPS_DIES", "1")
	dead.cfg.Timeout = 100 * time.Millisecond
	if _, err := dead.Acquire(ctx, gpuB, "job", 0.25, 0); err == nil || !strings.Contains(err.Error(), "no daemon runs") {
		t.Fatalf("Acquire with no daemon coming up = %v", err)
	}
	if len(dead.Holders()) != 0 {
		t.Errorf("a share was kept without a daemon: %v", dead.Holders())
	}
}

// TestRunRestartsOnItsProbe: Run looks at the daemons every Probe and
// starts a dead one again, on the test's clock.
func TestRunRestartsOnItsProbe(t *testing.T) {
	f := newFake(t, "FAKE_MPS_NO_STATIC", "1")
	synctest.Test(t, func(t *testing.T) {
		f.cfg.Probe = 5 * time.Second
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		if _, err := f.Acquire(ctx, gpuA, "job", 0.5, 0); err != nil {
			t.Fatal(err)
		}
		go func() { done <- f.Run(ctx) }()
		pid := f.pid(t, gpuA)
		syscall.Kill(pid, syscall.SIGKILL)
		waitGone(t, pid)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if f.alive(gpuA) {
			t.Fatal("restarted before its probe")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if !f.alive(gpuA) {
			t.Fatal("not restarted at its probe")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
