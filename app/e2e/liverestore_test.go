//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/containers/dockertest"
	"github.com/labpool/labpool/node/jobs"
)

// liveDockerd is a private dockerd in a host's namespace started with
// --live-restore, which can be restarted on the same data.
type liveDockerd struct {
	t    *testing.T
	h    *host
	dir  string
	sock string
	cmd  *exec.Cmd
}

// liveDocker starts dockerd with --live-restore in h's namespace, as
// docker does, imports the test image and points h's labpool processes
// at it.
func (h *host) liveDocker(t *testing.T) *liveDockerd {
	t.Helper()
	if _, err := exec.LookPath("dockerd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dockerd is not installed")
		}
		t.Skip("dockerd is not installed")
	}
	dir, err := os.MkdirTemp("", "lpdk-"+h.name+"-")
	if err != nil {
		t.Fatal(err)
	}
	d := &liveDockerd{t: t, h: h, dir: dir, sock: "unix://" + filepath.Join(dir, "d.sock")}
	d.start()
	t.Cleanup(func() {
		// Live restore leaves containers running past dockerd: remove them first.
		if out, _ := exec.Command("docker", "-H", d.sock, "ps", "-aq").Output(); len(out) > 0 {
			exec.Command("docker", append([]string{"-H", d.sock, "rm", "-f"}, strings.Fields(string(out))...)...).Run()
		}
		d.stop()
		exec.Command("umount", "-R", filepath.Join(dir, "root")).Run()
		os.RemoveAll(dir)
	})
	if err := dockertest.ImportBusybox(d.sock); err != nil {
		t.Fatal(err)
	}
	h.env = append(h.env, "DOCKER_HOST="+d.sock)
	return d
}

// start runs dockerd and waits until it answers.
func (d *liveDockerd) start() {
	d.t.Helper()
	logf, _ := os.OpenFile(filepath.Join(d.dir, "dockerd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	// nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroups
	// dockerd needs.
	d.cmd = exec.Command("nsenter", "--net=/var/run/netns/"+d.h.ns, "dockerd", "--live-restore", "--host", d.sock,
		"--data-root", filepath.Join(d.dir, "root"), "--exec-root", filepath.Join(d.dir, "x"),
		"--pidfile", filepath.Join(d.dir, "d.pid"))
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	if err := d.cmd.Start(); err != nil {
		d.t.Fatalf("start dockerd in %s: %v", d.h.name, err)
	}
	waitFor(d.t, 60*time.Second, "dockerd in "+d.h.name, func() error {
		return exec.Command("docker", "-H", d.sock, "version").Run()
	})
}

// stop ends dockerd with SIGTERM (live restore: its containers go on) and
// returns once it has exited.
func (d *liveDockerd) stop() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-done
	}
	d.cmd = nil
}

// inspect is the container's main pid, start time and running state.
func (d *liveDockerd) inspect(container string) (pid int, started string, running bool) {
	d.t.Helper()
	out, err := exec.Command("docker", "-H", d.sock, "inspect", "-f", "{{.State.Pid}} {{.State.StartedAt}} {{.State.Running}}", container).Output()
	if err != nil {
		d.t.Fatalf("docker inspect %s: %v", container, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		d.t.Fatalf("docker inspect %s: %q", container, out)
	}
	pid, _ = strconv.Atoi(f[0])
	return pid, f[1], f[2] == "true"
}

// TestDockerdLiveRestore (T27): a machine whose dockerd runs with
// --live-restore runs a job; dockerd is restarted under it (SIGTERM, then
// started again on the same data). The job's container keeps running the
// whole time (same main process, same start), the agent goes on with it:
// the job stays running, its logs from before the restart are all there
// and a follow started after it shows new lines, stop ends it (exited,
// with GPU-seconds), and a new job launches on the restarted engine.
func TestDockerdLiveRestore(t *testing.T) {
	l := newLAN(t, "gpu", "laptop")
	gpu, laptop := l.host("gpu"), l.host("laptop")
	gpu.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	dk := gpu.liveDocker(t)
	gpu.agent()
	laptop.agent()
	gpu.waitDaemon()
	laptop.waitDaemon()
	joinAll(t, gpu, laptop)
	waitFor(t, 20*time.Second, "gpu live on the laptop", func() error { return liveNodes(laptop, "gpu") })
	ctx := context.Background()
	c := laptop.client()
	waitJob := func(id, state string) app.Job {
		t.Helper()
		var j app.Job
		waitFor(t, 30*time.Second, "job "+id+" "+state, func() error {
			var err error
			if j, err = c.Job(ctx, id); err != nil {
				return err
			}
			if string(j.State) != state {
				return fmt.Errorf("state %s (%s)", j.State, j.Error)
			}
			return nil
		})
		return j
	}
	const img = "labpool-test/busybox:1"
	j, err := c.Launch(ctx, app.LaunchRequest{Spec: jobs.Spec{Image: img, GPUs: 1,
		Cmd: []string{"sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"}}})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	waitJob(j.ID, "running")
	ctr := onlyContainer(t, dk)
	pid, started, running := dk.inspect(ctr)
	if !running || pid <= 0 {
		t.Fatalf("container %s: pid %d, running %v", ctr, pid, running)
	}
	waitFor(t, 10*time.Second, "a few ticks logged", func() error {
		if n := lastTick(t, c, j.ID); n < 5 {
			return fmt.Errorf("last tick %d", n)
		}
		return nil
	})

	dk.stop()
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the job's process %d died with dockerd (live restore): %v", pid, err)
	}
	time.Sleep(time.Second) // the job goes on with no dockerd
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the job's process %d died while dockerd was down: %v", pid, err)
	}
	dk.start()

	pid2, started2, running2 := dk.inspect(ctr)
	if pid2 != pid || started2 != started || !running2 {
		t.Fatalf("after the restart the container is pid %d, started %s, running %v; want pid %d, started %s, running",
			pid2, started2, running2, pid, started)
	}
	before := lastTick(t, c, j.ID)
	if j := waitJob(j.ID, "running"); j.Finished != nil {
		t.Fatalf("the job after the restart: %+v", j.Job)
	}
	// Every line from the start is there: tick 0 first, none missing.
	if err := ticksComplete(c, j.ID); err != nil {
		t.Errorf("logs after the restart: %v", err)
	}
	// A follow opened now shows lines the job writes from now on.
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	rc, err := c.Logs(fctx, j.ID, true, 1)
	if err != nil {
		cancel()
		t.Fatalf("follow the logs after the restart: %v", err)
	}
	newer := false
	for sc := bufio.NewScanner(rc); sc.Scan(); {
		if n, ok := tickOf(sc.Text()); ok && n > before+5 {
			newer = true
			break
		}
	}
	rc.Close()
	cancel()
	if !newer {
		t.Errorf("following the logs after the restart showed no tick past %d", before+5)
	}

	if _, err := c.StopJob(ctx, j.ID); err != nil {
		t.Fatalf("stop after the restart: %v", err)
	}
	stopped := waitJob(j.ID, "exited")
	if stopped.Finished == nil || stopped.GPUSeconds <= 0 {
		t.Errorf("stopped job %+v: want finished and GPU-seconds", stopped.Job)
	}
	if _, _, running := dk.inspect(ctr); running {
		t.Errorf("container %s still running after stop", ctr)
	}
	j2, err := c.Launch(ctx, app.LaunchRequest{Spec: jobs.Spec{Image: img, GPUs: 2, Cmd: []string{"sleep", "600"}}})
	if err != nil {
		t.Fatalf("launch on the restarted engine (both GPUs, so the first job's grant must be gone): %v", err)
	}
	waitJob(j2.ID, "running")
}

// onlyContainer is the ID of the one container of d.
func onlyContainer(t *testing.T, d *liveDockerd) string {
	t.Helper()
	out, err := exec.Command("docker", "-H", d.sock, "ps", "-q", "--no-trunc").Output()
	ids := strings.Fields(string(out))
	if err != nil || len(ids) != 1 {
		t.Fatalf("docker ps: %q, %v; want one container", out, err)
	}
	return ids[0]
}

// tickOf is n of a "tick n" line.
func tickOf(line string) (int, bool) {
	s, ok := strings.CutPrefix(strings.TrimSpace(line), "tick ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// lastTick is the highest tick of the job's logs so far (-1: none).
func lastTick(t *testing.T, c interface {
	Logs(context.Context, string, bool, int) (io.ReadCloser, error)
}, id string) int {
	t.Helper()
	rc, err := c.Logs(context.Background(), id, false, 20)
	if err != nil {
		t.Fatalf("logs of %s: %v", id, err)
	}
	defer rc.Close()
	last := -1
	for sc := bufio.NewScanner(rc); sc.Scan(); {
		if n, ok := tickOf(sc.Text()); ok {
			last = max(last, n)
		}
	}
	return last
}

// ticksComplete checks that the job's whole log is tick 0, 1, 2, ...
func ticksComplete(c interface {
	Logs(context.Context, string, bool, int) (io.ReadCloser, error)
}, id string) error {
	rc, err := c.Logs(context.Background(), id, false, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	want := 0
	for sc := bufio.NewScanner(rc); sc.Scan(); {
		n, ok := tickOf(sc.Text())
		if !ok {
			return fmt.Errorf("line %q", sc.Text())
		}
		if n != want {
			return fmt.Errorf("tick %d where tick %d was due", n, want)
		}
		want++
	}
	if want == 0 {
		return fmt.Errorf("no line")
	}
	return nil
}
