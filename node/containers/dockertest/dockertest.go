// Package dockertest gives tests a real Docker engine: the one DOCKER_HOST
// names, or a private dockerd started on its own socket and data root, and
// a busybox image imported without a registry.
package dockertest

import (
	"fmt"
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
	if _, err := exec.LookPath("dockerd"); err != nil {
		skipWhy = "dockerd is not installed (apt-get install docker.io)"
		return
	}
	dir, err := os.MkdirTemp("", "lp-dk-")
	if err != nil {
		failErr = err
		return
	}
	sock := filepath.Join(dir, "docker.sock")
	host = "unix://" + sock
	logf, _ := os.Create(filepath.Join(dir, "dockerd.log"))
	cmd := exec.Command("dockerd", "--host", host, "--data-root", filepath.Join(dir, "root"),
		"--exec-root", filepath.Join(dir, "exec"), "--pidfile", filepath.Join(dir, "dockerd.pid"),
		"--bridge", "docker0", "--iptables=true")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		failErr = fmt.Errorf("start dockerd: %w", err)
		return
	}
	stopFn = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
		}
		os.RemoveAll(dir)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if exec.Command("docker", "-H", host, "version").Run() == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			failErr = fmt.Errorf("dockerd did not answer in 60 s:\n%s", tail(string(log), 20))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	failErr = ImportBusybox(host)
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
	os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("root:x:0:0:root:/:/bin/sh\n"), 0o644)
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
