//go:build linux

package containers

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/labpool/labpool/node/containers/dockertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.Stop()
	os.Exit(code)
}

func openRuntime(t *testing.T) *Runtime {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a docker engine: skipped in -short mode")
	}
	host := dockertest.Engine(t)
	cfg := DefaultConfig()
	cfg.Host = host
	r, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func launch(name string, cmd ...string) Launch {
	return Launch{Name: name, Image: dockertest.Image, Cmd: cmd,
		Labels: map[string]string{LabelJob: name, LabelOwner: "test"}}
}

func cleanup(t *testing.T, r *Runtime, id string) {
	t.Cleanup(func() { r.Remove(context.Background(), id) })
}

func TestRunLogsStatsStop(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	name := fmt.Sprintf("lp-test-%d", time.Now().UnixNano())
	c, err := r.Run(ctx, launch(name, "sh", "-c", "echo hello from labpool; echo oops >&2; while true; do echo tick; sleep 0.2; done"))
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, c.ID)
	if !c.Running || c.Labels[LabelManaged] != "true" || c.Labels[LabelJob] != name {
		t.Fatalf("container %+v", c)
	}
	rc, err := r.Logs(ctx, c.ID, true, -1)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(rc)
	var lines []string
	for sc.Scan() && len(lines) < 4 {
		lines = append(lines, sc.Text())
	}
	rc.Close()
	if !slices.Contains(lines, "hello from labpool") || !slices.Contains(lines, "oops") {
		t.Errorf("logs %q lack stdout or stderr", lines)
	}
	u, err := r.Stats(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.MemUsedBytes == 0 || len(u.PIDs) == 0 {
		t.Errorf("stats %+v", u)
	}
	start := time.Now()
	if err := r.Stop(ctx, c.ID, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop took %v", time.Since(start))
	c, err = r.Inspect(ctx, c.ID)
	if err != nil || c.Running || c.Finished.IsZero() {
		t.Errorf("after stop: %+v, %v", c, err)
	}
}

// TestHardening reads back what Docker created: the request cannot loosen it.
func TestHardening(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	l := launch(fmt.Sprintf("lp-hard-%d", time.Now().UnixNano()), "sleep", "30")
	l.Ports = []int{8080, 9090}
	l.MemoryBytes, l.CPUs, l.ShmBytes, l.Restart, l.LogMaxBytes = 64<<20, 0.5, 32<<20, "on-failure", 64<<20
	dir := t.TempDir()
	l.Binds = []Bind{{HostPath: dir, Target: "/data", ReadOnly: true}, {HostPath: dir, Target: "/out"}}
	c, err := r.Create(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, c.ID)
	ins, err := r.api.ContainerInspect(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	h := ins.HostConfig
	if h.Privileged || !slices.Equal(h.CapDrop, []string{"ALL"}) || !slices.Contains(h.SecurityOpt, "no-new-privileges:true") ||
		h.Init == nil || !*h.Init || h.PidsLimit == nil || *h.PidsLimit != 4096 || !strings.HasPrefix(string(h.NetworkMode), "labpool-outside-") ||
		h.PidMode != "" || h.IpcMode != "private" || h.UTSMode != "" || h.UsernsMode != "" ||
		len(h.Devices) != 0 || len(h.DeviceRequests) != 0 || h.Memory != 64<<20 || h.NanoCPUs != 5e8 || h.ShmSize != 32<<20 {
		t.Errorf("host config not hardened or not as asked: %+v", h)
	}
	for _, o := range h.SecurityOpt {
		if strings.Contains(o, "unconfined") {
			t.Errorf("security option %q", o)
		}
	}
	if h.LogConfig.Type != "json-file" || h.LogConfig.Config["max-size"] != "33554432" || h.LogConfig.Config["max-file"] != "2" {
		t.Errorf("log config %+v, want json-file capped at 2 x 32 MiB", h.LogConfig)
	}
	if ins.Config.User != DefaultJobUser || len(h.CapAdd) != 0 {
		t.Errorf("user %q caps %v, want %s with no capability", ins.Config.User, h.CapAdd, DefaultJobUser)
	}
	if h.RestartPolicy.Name != "on-failure" || h.RestartPolicy.MaximumRetryCount != DefaultConfig().MaxRestarts {
		t.Errorf("restart policy %+v", h.RestartPolicy)
	}
	if len(h.Mounts) != 2 || h.Mounts[0].Source != dir || h.Mounts[0].Target != "/data" || !h.Mounts[0].ReadOnly ||
		h.Mounts[1].Target != "/out" || h.Mounts[1].ReadOnly || len(h.Binds) != 0 {
		t.Errorf("mounts %+v, binds %q: want /data read-only and /out read-write", h.Mounts, h.Binds)
	}
	if lb := ins.Config.Labels; lb[LabelManaged] != "true" || lb[LabelJob] != l.Name || lb[LabelOwner] != "test" {
		t.Errorf("labels %v", lb)
	}
	if len(h.PortBindings) != 0 || h.PublishAllPorts {
		t.Errorf("port bindings %v: a job's ports are published nowhere", h.PortBindings)
	}
	if _, ok := ins.Config.ExposedPorts["9090/tcp"]; !ok || len(ins.Config.ExposedPorts) != 2 {
		t.Errorf("exposed ports %v, want 8080 and 9090", ins.Config.ExposedPorts)
	}
	for _, c := range h.CapAdd {
		if !slices.Contains(Capabilities, strings.TrimPrefix(c, "CAP_")) {
			t.Errorf("capability %s beyond the allowlist", c)
		}
	}
	out, err := exec.Command("docker", "-H", dockertest.Engine(t), "inspect", "-f", "{{.HostConfig.Privileged}} {{.HostConfig.SecurityOpt}} {{index .Config.Labels \"labpool.managed\"}}", c.ID).CombinedOutput()
	if got := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(got, "false [no-new-privileges:true seccomp={") || !strings.HasSuffix(got, "}] true") {
		t.Errorf("docker inspect says %.200q (%v)", out, err)
	}
}

// TestHTTPAtTheContainersAddress: the agent reaches a job's port at the
// container's address on its own network.
func TestHTTPAtTheContainersAddress(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	page := fmt.Sprintf("labpool page %d", time.Now().UnixNano())
	l := launch(fmt.Sprintf("lp-http-%d", time.Now().UnixNano()), "sh", "-c",
		"mkdir -p /tmp/srv && echo '"+page+"' > /tmp/srv/index.html && exec httpd -f -p 8080 -h /tmp/srv")
	l.Ports = []int{8080}
	c, err := r.Run(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, c.ID)
	hp := c.Ports[8080]
	if hp != 8080 || c.Addr == "" || c.Addr == "127.0.0.1" {
		t.Fatalf("address %q ports %+v: want the container's own address and 8080", c.Addr, c.Ports)
	}
	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://%s:%d/", c.Addr, hp))
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("httpd on %s:%d: %v", c.Addr, hp, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(string(body), page) {
		t.Errorf("body %q", body)
	}
}

func TestGPURequestFailsClearlyWithoutNvidiaRuntime(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	l := launch(fmt.Sprintf("lp-gpu-%d", time.Now().UnixNano()), "sleep", "30")
	l.GPUs = []string{"GPU-11111111-2222-3333-4444-555555555555"}
	c, err := r.Create(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := r.api.ContainerInspect(ctx, c.ID)
	dr := ins.HostConfig.DeviceRequests
	if len(dr) != 1 || !slices.Equal(dr[0].DeviceIDs, l.GPUs) || dr[0].Driver != "nvidia" || dr[0].Count != 0 ||
		len(dr[0].Capabilities) != 1 || !slices.Equal(dr[0].Capabilities[0], []string{"gpu"}) {
		t.Errorf("device requests %+v, want exactly the granted UUIDs", dr)
	}
	r.Remove(ctx, c.ID)
	_, err = r.Run(ctx, l)
	if err == nil || !strings.Contains(err.Error(), "NVIDIA runtime") {
		t.Fatalf("run with GPUs here: %v, want the clear NVIDIA runtime error", err)
	}
	left, err := r.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", l.Name))})
	if err != nil || len(left) != 0 {
		t.Errorf("a failed GPU start left %d containers behind (%v)", len(left), err)
	}
}

func TestUnmanagedContainerRefused(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	resp, err := r.api.ContainerCreate(ctx, &container.Config{Image: dockertest.Image, Cmd: []string{"sleep", "30"},
		Labels: map[string]string{LabelManaged: "false", LabelJob: "imposter"}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.api.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true})
	if err := r.api.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"start":   func() error { _, err := r.Start(ctx, resp.ID); return err },
		"stop":    func() error { return r.Stop(ctx, resp.ID, time.Second) },
		"remove":  func() error { return r.Remove(ctx, resp.ID) },
		"inspect": func() error { _, err := r.Inspect(ctx, resp.ID); return err },
		"logs":    func() error { _, err := r.Logs(ctx, resp.ID, false, 10); return err },
		"stats":   func() error { _, err := r.Stats(ctx, resp.ID); return err },
	} {
		if err := call(); !errors.Is(err, ErrNotManaged) {
			t.Errorf("%s on an unmanaged container: %v, want ErrNotManaged", name, err)
		}
	}
	list, _ := r.List(ctx)
	for _, c := range list {
		if c.ID == resp.ID {
			t.Errorf("List returned an unmanaged container")
		}
	}
	if ins, err := r.api.ContainerInspect(ctx, resp.ID); err != nil || !ins.State.Running {
		t.Errorf("the unmanaged container was touched: %v", err)
	}
}

func TestUnknownImageAndCorruptArchive(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	_, err := r.Run(ctx, Launch{Image: "labpool-test/nope:1", Cmd: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "not on this machine") {
		t.Errorf("unknown image: %v", err)
	}
	if !strings.Contains(err.Error(), "labpool image load") {
		t.Errorf("unknown image error %q does not say how to get it", err)
	}
	for name, archive := range map[string]string{
		"not a tar":   strings.Repeat("this is not a tar archive\n", 100),
		"empty tar":   string(make([]byte, 1024)),
		"no manifest": tarOf(t, map[string]string{"hello.txt": "hi"}),
	} {
		var read int64
		_, err = r.LoadImage(ctx, strings.NewReader(archive), Rights{}, func(done, _ int64, _ string) { read = done })
		if !errors.Is(err, ErrBadArchive) {
			t.Errorf("load %s: %v, want ErrBadArchive", name, err)
		} else {
			t.Logf("load %s: %v", name, err)
		}
		if read == 0 {
			t.Errorf("load %s: no progress reported", name)
		}
	}
	imgs, err := r.Images(ctx)
	if err != nil || !slices.ContainsFunc(imgs, func(i Image) bool { return slices.Contains(i.Tags, dockertest.Image) }) {
		t.Errorf("images %+v, %v: want %s", imgs, err, dockertest.Image)
	}
}

func TestEventsReportExit(t *testing.T) {
	r := openRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, errs := r.Events(ctx)
	// An unmanaged container that dies first must not show up.
	other, err := r.api.ContainerCreate(ctx, &container.Config{Image: dockertest.Image, Cmd: []string{"true"}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.api.ContainerRemove(context.Background(), other.ID, container.RemoveOptions{Force: true})
	if err := r.api.ContainerStart(ctx, other.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	for ins, _ := r.api.ContainerInspect(ctx, other.ID); ins.State != nil && ins.State.Running; ins, _ = r.api.ContainerInspect(ctx, other.ID) {
		time.Sleep(20 * time.Millisecond)
	}
	c, err := r.Run(ctx, launch(fmt.Sprintf("lp-ev-%d", time.Now().UnixNano()), "sh", "-c", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, c.ID)
	for {
		select {
		case ev := <-evs:
			if ev.ID == other.ID {
				t.Errorf("event %s of an unmanaged container delivered", ev.Action)
			}
			if ev.ID == c.ID && ev.Action == "die" {
				if ev.Labels[LabelJob] != c.Name || ev.Time.IsZero() {
					t.Errorf("event %+v lacks labels or time", ev)
				}
				got, _ := r.Inspect(ctx, c.ID)
				if got.ExitCode != 3 {
					t.Errorf("exit code %d, want 3", got.ExitCode)
				}
				return
			}
		case err := <-errs:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal("no die event")
		}
	}
}

// tarOf builds a tar archive of the given files.
func tarOf(t *testing.T, files map[string]string) string {
	t.Helper()
	var b strings.Builder
	tw := tar.NewWriter(&b)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestLoadSavedImageAndPullError(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	saved, err := exec.Command("docker", "-H", dockertest.Engine(t), "save", dockertest.Image).Output()
	if err != nil {
		t.Fatalf("docker save: %v", err)
	}
	var last int64
	tags, err := r.LoadImage(ctx, strings.NewReader(string(saved)), Rights{AnyName: true}, func(done, _ int64, _ string) { last = done })
	if err != nil || !slices.Contains(tags, dockertest.Image) {
		t.Errorf("LoadImage = %v, %v; want %s", tags, err, dockertest.Image)
	}
	if last != int64(len(saved)) {
		t.Errorf("progress ended at %d bytes of %d", last, len(saved))
	}
	err = r.PullImage(ctx, "127.0.0.1:1/labpool-test/nope:1", false, nil)
	if err == nil || !strings.Contains(err.Error(), "pull 127.0.0.1:1/labpool-test/nope:1") {
		t.Errorf("pull from nowhere: %v", err)
	}
}
