//go:build linux

package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/containers/dockertest"
)

// bin is the headless labpool binary under test.
var bin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// Each host is a machine of its own person, named after it (root's
	// default): under sudo every host's CLI would name the one who ran it.
	os.Unsetenv("SUDO_USER")
	bin = os.Getenv("LABPOOL_BIN")
	if bin == "" && !testing.Short() {
		dir, err := os.MkdirTemp("", "labpool-e2e-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "labpool")
		cmd := exec.Command("go", "build", "-tags", "headless", "-o", bin, "../..")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build labpool:", err)
			return 1
		}
	}
	return m.Run()
}

// requireNetns skips (or, under CI, fails) when namespaces can't be made.
func requireNetns(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-host test: skipped in -short mode")
	}
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root to create network namespaces"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "needs iproute2 (ip)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("multi-host test cannot run under CI: %s", why)
	}
	t.Skip("multi-host test: " + why)
}

// lan is a set of namespaces on one bridge, which lives in its own namespace
// so nothing touches the machine's own network.
type lan struct {
	t      testing.TB
	prefix string // unique per run, keeps parallel runs apart
	subnet int    // third octet of 10.231.N.0/24
	hosts  []*host
}

// host is one namespace with one labpool data directory.
type host struct {
	lan  *lan
	name string // also the labpool node name
	ns   string
	ip   string
	data string
	env  []string // extra environment of its labpool processes
	// bin is the labpool binary this host runs: "" for the global bin
	// (LABPOOL_BIN); an arm64 host's under qemu-user (arm64_test.go).
	bin string

	mu   sync.Mutex // guards proc, log and logs
	proc *exec.Cmd
	log  *syncBuffer
	logs []string // earlier processes' logs, for failure reports
}

func newLAN(t testing.TB, names ...string) *lan {
	t.Helper()
	requireNetns(t)
	pid := os.Getpid()
	l := &lan{t: t, prefix: fmt.Sprintf("lp%d", pid%100000), subnet: 20 + pid%200}
	sw := l.prefix + "sw"
	l.ip("netns", "add", sw)
	t.Cleanup(func() { l.cleanup() })
	l.ip("-n", sw, "link", "add", "br0", "type", "bridge")
	l.ip("-n", sw, "link", "set", "br0", "up")
	for i, name := range names {
		h := &host{lan: l, name: name, ns: fmt.Sprintf("%s%s", l.prefix, name),
			ip: fmt.Sprintf("10.231.%d.%d", l.subnet, i+1), data: filepath.Join(t.TempDir(), name)}
		veth, peer := fmt.Sprintf("%sv%d", l.prefix, i), fmt.Sprintf("%sp%d", l.prefix, i)
		l.ip("netns", "add", h.ns)
		l.ip("link", "add", veth, "type", "veth", "peer", "name", peer)
		l.ip("link", "set", veth, "netns", h.ns)
		l.ip("link", "set", peer, "netns", sw)
		l.ip("-n", sw, "link", "set", peer, "master", "br0", "up")
		l.ip("-n", h.ns, "link", "set", veth, "name", "eth0")
		l.ip("-n", h.ns, "addr", "add", h.ip+"/24", "dev", "eth0")
		l.ip("-n", h.ns, "link", "set", "eth0", "multicast", "on", "up")
		l.ip("-n", h.ns, "link", "set", "lo", "up")
		l.hosts = append(l.hosts, h)
	}
	return l
}

func (l *lan) ip(args ...string) {
	l.t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (l *lan) cleanup() {
	for _, h := range l.hosts {
		h.kill()
		if l.t.Failed() {
			h.dumpLogs()
		}
		exec.Command("ip", "netns", "del", h.ns).Run()
	}
	exec.Command("ip", "netns", "del", l.prefix+"sw").Run()
}

func (l *lan) host(name string) *host {
	for _, h := range l.hosts {
		if h.name == name {
			return h
		}
	}
	l.t.Fatalf("no host %s", name)
	return nil
}

// start runs a long-lived labpool verb (agent or web) in h's namespace.
func (h *host) start(args ...string) {
	h.lan.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.proc != nil {
		h.lan.t.Fatalf("%s: a labpool process is already running", h.name)
	}
	full := append([]string{"netns", "exec", h.ns, h.binary(), "--data", h.data}, args...)
	cmd := exec.Command("ip", full...)
	h.log = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = h.log, h.log
	cmd.Env = append(append(os.Environ(), "LABPOOL_LOG=debug"), h.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		h.lan.t.Fatalf("start labpool on %s: %v", h.name, err)
	}
	h.proc = cmd
	go cmd.Wait()
}

// binary is the labpool binary h runs.
func (h *host) binary() string {
	if h.bin != "" {
		return h.bin
	}
	return bin
}

// agent starts `labpool agent` named after the host.
func (h *host) agent() {
	h.start("agent", "--name", h.name, "--iface", "eth0", "--listen", ":7420")
}

// kill sends SIGKILL to h's labpool process (the whole process group, so
// `ip netns exec` and labpool die together) and returns when it is gone.
func (h *host) kill() {
	h.mu.Lock()
	cmd := h.proc
	h.proc = nil
	if h.log != nil {
		h.logs = append(h.logs, h.log.String())
	}
	h.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	for i := 0; i < 200 && syscall.Kill(cmd.Process.Pid, 0) == nil; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// web starts `labpool web` on addr with the agent's flags named after the
// host and returns the URL it printed.
func (h *host) web(addr string) string {
	h.lan.t.Helper()
	h.start("web", "--listen", addr, "--name", h.name, "--iface", "eth0", "--peer-listen", ":7420")
	return h.webURL()
}

// webURL waits for the URL that h's running `labpool web` prints as the last
// line of its output (http://HOST:PORT/?token=SECRET, a new secret at each
// start) and returns it.
func (h *host) webURL() string {
	h.lan.t.Helper()
	var url string
	waitFor(h.lan.t, 30*time.Second, h.name+": the URL printed by labpool web", func() error {
		lines := strings.Split(strings.TrimSpace(h.logText()), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "http://") && strings.Contains(l, "/?token=") {
				url = l
				return nil
			}
		}
		return fmt.Errorf("not printed yet")
	})
	return url
}

// logText is the log of h's running process.
func (h *host) logText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.log == nil {
		return ""
	}
	return h.log.String()
}

func (h *host) dumpLogs() {
	h.mu.Lock()
	defer h.mu.Unlock()
	all := append(h.logs, "")
	if h.proc != nil && h.log != nil {
		all[len(all)-1] = h.log.String()
	}
	for _, s := range all {
		if s = strings.TrimSpace(s); s != "" {
			h.lan.t.Logf("--- log of %s:\n%s", h.name, lastLines(s, 60))
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cli runs a short labpool verb in h's namespace and returns its output and
// exit status.
func (h *host) cli(args ...string) (stdout, stderr string, code int) {
	h.lan.t.Helper()
	full := append([]string{"netns", "exec", h.ns, h.binary(), "--data", h.data}, args...)
	cmd := exec.Command("ip", full...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		h.lan.t.Fatalf("run labpool %v: %v", args, err)
	}
	return o.String(), e.String(), 0
}

// client talks to h's daemon through its unix socket, which is reachable
// from any network namespace.
func (h *host) client() *web.Client {
	return web.NewClient(filepath.Join(h.data, "labpool.sock"))
}

// waitDaemon waits until h's daemon answers.
func (h *host) waitDaemon() {
	h.lan.t.Helper()
	waitFor(h.lan.t, 20*time.Second, h.name+" daemon up", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return h.client().Ping(ctx)
	})
}

// waitFor polls cond every 50 ms until it returns nil or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("waiting %s for %s: %v", d, what, err)
}

// syncBuffer is a process's log, written by its pipes and read by the test.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// repoRoot is the module's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// docker starts a private dockerd inside h's namespace (each host its own
// engine, as on real machines), imports the test image, and points h's
// labpool processes at it.
func (h *host) docker() string {
	t := h.lan.t
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
	sock := "unix://" + filepath.Join(dir, "d.sock")
	logf, _ := os.Create(filepath.Join(dir, "dockerd.log"))
	// nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroups
	// dockerd needs.
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+h.ns, "dockerd", "--host", sock,
		"--data-root", filepath.Join(dir, "root"), "--exec-root", filepath.Join(dir, "x"),
		"--pidfile", filepath.Join(dir, "d.pid"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dockerd in %s: %v", h.name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
		exec.Command("umount", "-R", filepath.Join(dir, "root")).Run()
		os.RemoveAll(dir)
	})
	waitFor(t, 60*time.Second, "dockerd in "+h.name, func() error {
		return exec.Command("docker", "-H", sock, "version").Run()
	})
	if err := dockertest.ImportBusybox(sock); err != nil {
		t.Fatal(err)
	}
	h.env = append(h.env, "DOCKER_HOST="+sock)
	return sock
}
