//go:build linux

// Package dockertest gives tests a real Docker engine: the one DOCKER_HOST
// names, or a private dockerd started on its own socket and data root, and
// a busybox image imported without a registry.
package dockertest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Image is the test image: busybox with sh, sleep, httpd, nc and wget.
const Image = "labpool-test/busybox:1"

var (
	once    sync.Once
	host    string
	stopFn  func()
	skipWhy string
	failErr error
)

// Engine returns the address of a Docker engine with Image loaded. Without
// root or dockerd it skips the test, except under CI=true where it fails.
// Call Stop from TestMain after m.Run.
func Engine(t testing.TB) string {
	t.Helper()
	once.Do(start)
	switch {
	case failErr != nil:
		t.Fatalf("docker engine: %v", failErr)
	case skipWhy != "" && os.Getenv("CI") == "true":
		t.Fatalf("docker engine needed under CI: %s", skipWhy)
	case skipWhy != "":
		t.Skip("docker engine: " + skipWhy)
	}
	return host
}

// Stop stops the private engine, if one was started.
func Stop() {
	if stopFn != nil {
		stopFn()
	}
}

func start() {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		host = h
		failErr = ImportBusybox(host)
		return
	}
	if os.Geteuid() != 0 {
		skipWhy = "needs root to start a private dockerd (or set DOCKER_HOST)"
		return
	}
	for _, bin := range []string{"dockerd", "docker", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			skipWhy = bin + " is not installed (apt-get install docker.io iproute2)"
			return
		}
	}
	e, err := startEngine()
	if err != nil {
		failErr = err
		return
	}
	host, stopFn = e.host, e.stop
	failErr = ImportBusybox(host)
}

// engine is a private dockerd with its own directory and its own bridge,
// so that engines started by several test binaries at once never hand out
// the same container address. It leaves iptables alone: ports are
// published by docker-proxy on loopback.
type engine struct {
	host, dir, bridge string
	cmd               *exec.Cmd
}

func startEngine() (*engine, error) {
	dir, err := os.MkdirTemp("", "lp-dk-")
	if err != nil {
		return nil, fmt.Errorf("make engine directory: %w", err)
	}
	e := &engine{dir: dir, host: "unix://" + filepath.Join(dir, "docker.sock")}
	if e.bridge, err = makeBridge(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		e.stop()
		return nil, fmt.Errorf("create dockerd log: %w", err)
	}
	defer logf.Close()
	e.cmd = exec.Command("dockerd", "--host", e.host, "--data-root", filepath.Join(dir, "root"),
		"--exec-root", filepath.Join(dir, "exec"), "--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--bridge", e.bridge, "--iptables=false", "--ip-masq=false")
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	// Own process group (a ^C to the test does not reach it first); dies
	// with the test binary if that is killed before Stop.
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := e.cmd.Start(); err != nil {
		e.stop()
		return nil, fmt.Errorf("start dockerd: %w", err)
	}
	if err := e.wait(60 * time.Second); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// wait polls the engine until it answers.
func (e *engine) wait(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for exec.Command("docker", "-H", e.host, "version").Run() != nil {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
			return fmt.Errorf("dockerd did not answer in %v:\n%s", limit, tail(string(log), 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// stop stops dockerd (its containers with it) and removes what it made.
func (e *engine) stop() {
	if e.cmd != nil && e.cmd.Process != nil {
		e.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { e.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			e.cmd.Process.Kill()
			<-done
		}
	}
	if e.bridge != "" {
		exec.Command("ip", "link", "del", e.bridge).Run()
	}
	// Mounts left under the exec root by a killed engine would make
	// RemoveAll fail; unmount them first.
	exec.Command("umount", "-R", "-l", filepath.Join(e.dir, "exec")).Run()
	exec.Command("umount", "-R", "-l", filepath.Join(e.dir, "root")).Run()
	os.RemoveAll(e.dir)
}

// makeBridge creates a bridge named after this process on a /24 that no
// interface here uses yet.
func makeBridge() (string, error) {
	name := fmt.Sprintf("lpdk%d", os.Getpid())
	if len(name) > 15 {
		name = name[:15]
	}
	exec.Command("ip", "link", "del", name).Run() // a leftover of an earlier process with this PID
	used := usedAddrs()
	for i := range 250 {
		n := (os.Getpid() + i) % 250
		cidr := fmt.Sprintf("10.213.%d.1/24", n)
		if used[fmt.Sprintf("10.213.%d", n)] {
			continue
		}
		for _, args := range [][]string{
			{"link", "add", "name", name, "type", "bridge"},
			{"addr", "add", cidr, "dev", name},
			{"link", "set", name, "up"},
		} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				exec.Command("ip", "link", "del", name).Run()
				return "", fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
		return name, nil
	}
	return "", errors.New("no free 10.213.x.0/24 subnet for a test bridge")
}

// usedAddrs returns the first three octets of every IPv4 address here.
func usedAddrs() map[string]bool {
	used := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip := n.IP.To4(); ip != nil {
				used[fmt.Sprintf("%d.%d.%d", ip[0], ip[1], ip[2])] = true
			}
		}
	}
	return used
}

// ImportBusybox imports Image into the engine at host from this machine's
// busybox, if the engine lacks it.
func ImportBusybox(host string) error {
	if exec.Command("docker", "-H", host, "image", "inspect", Image).Run() == nil {
		return nil
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return fmt.Errorf("busybox is not installed (apt-get install busybox-static): %w", err)
	}
	root, err := os.MkdirTemp("", "lp-bb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	for _, d := range []string{"bin", "tmp", "www", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(bb)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), data, 0o755); err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(root, "bin", "busybox"), "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" {
			os.Symlink("busybox", filepath.Join(root, "bin", a))
		}
	}
	os.WriteFile(filepath.Join(root, "www", "index.html"), []byte("labpool test page\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"), 0o644)
	// The image's own group file puts nobody in root's group: a job must
	// not get that group (tests check `id`).
	os.WriteFile(filepath.Join(root, "etc", "group"), []byte("root:x:0:nobody\nnogroup:x:65534:\n"), 0o644)
	// Jobs run as nobody: /tmp is theirs to write, as on any system.
	os.Chmod(filepath.Join(root, "tmp"), 0o777|os.ModeSticky)
	tarCmd := exec.Command("tar", "-C", root, "-c", ".")
	imp := exec.Command("docker", "-H", host, "import", "-", Image)
	pipe, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	imp.Stdin = pipe
	if err := tarCmd.Start(); err != nil {
		return err
	}
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("docker import: %v: %s", err, out)
	}
	return tarCmd.Wait()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
