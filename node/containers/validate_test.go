package containers

import (
	"bytes"
	"errors"
	"math"
	"path"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/jobs"
)

// dockerCaps are the Docker executor's capabilities, as the manager reads
// them.
var dockerCaps = jobs.Capabilities{Name: "docker", Images: []string{"docker"}, Restart: true}

// specRules is the Docker executor's validator, without an engine.
type specRules struct{}

func (specRules) ValidateTask(s jobs.Spec) error { return ValidateSpec(s) }

// validate is what the manager checks of a spec for the Docker executor
// on a machine with gpus GPUs: Docker's rules, then the portable ones.
func validate(s jobs.Spec, gpus int) error { return jobs.Validate(s, dockerCaps, specRules{}, gpus) }

func underAny(p string, roots ...string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func TestValidateRefusals(t *testing.T) {
	ok := jobs.Spec{Image: "labpool-test/busybox:1", Cmd: []string{"sleep", "1"}}
	with := func(f func(*jobs.Spec)) jobs.Spec { s := ok; f(&s); return s }
	tests := []struct {
		name string
		spec jobs.Spec
		rule string
	}{
		{"privileged", with(func(s *jobs.Spec) { s.Privileged = true }), "no-privileged"},
		{"host network", with(func(s *jobs.Spec) { s.NetworkMode = "host" }), "no-host-namespaces"},
		{"container network", with(func(s *jobs.Spec) { s.NetworkMode = "container:abc" }), "no-host-namespaces"},
		{"host pid", with(func(s *jobs.Spec) { s.PidMode = "host" }), "no-host-namespaces"},
		{"host ipc", with(func(s *jobs.Spec) { s.IpcMode = "host" }), "no-host-namespaces"},
		{"host uts", with(func(s *jobs.Spec) { s.UTSMode = "host" }), "no-host-namespaces"},
		{"host userns", with(func(s *jobs.Spec) { s.UsernsMode = "host" }), "no-host-namespaces"},
		{"cap add", with(func(s *jobs.Spec) { s.CapAdd = []string{"SYS_ADMIN"} }), "no-extra-capabilities"},
		{"device", with(func(s *jobs.Spec) { s.Devices = []string{"/dev/sda"} }), "no-devices"},
		{"seccomp unconfined", with(func(s *jobs.Spec) { s.SecurityOpt = []string{"seccomp=unconfined"} }), "no-security-opt"},
		{"apparmor unconfined", with(func(s *jobs.Spec) { s.SecurityOpt = []string{"apparmor=unconfined"} }), "no-security-opt"},
		{"bind root", with(func(s *jobs.Spec) { s.Binds = []string{"/:/host"} }), "shared-folders-only"},
		{"bind docker socket", with(func(s *jobs.Spec) { s.Binds = []string{"/var/run/docker.sock:/s"} }), "shared-folders-only"},
		{"port on all", with(func(s *jobs.Spec) { s.PortBinds = []string{"0.0.0.0:8888:8888"} }), "loopback-ports-only"},
		{"port no host", with(func(s *jobs.Spec) { s.PortBinds = []string{"8888"} }), "loopback-ports-only"},
		{"empty image", with(func(s *jobs.Spec) { s.Image = "" }), "image-ref"},
		{"bad image", with(func(s *jobs.Spec) { s.Image = "UPPER/../x" }), "image-ref"},
		{"env not kv", with(func(s *jobs.Spec) { s.Env = []string{"NOVALUE"} }), "env"},
		{"mount to proc", with(func(s *jobs.Spec) { s.Mounts = []jobs.Mount{{Folder: "d", Target: "/proc/x"}} }), "mount-target"},
		{"mount relative", with(func(s *jobs.Spec) { s.Mounts = []jobs.Mount{{Folder: "d", Target: "data"}} }), "mount-target"},
		{"mount root", with(func(s *jobs.Spec) { s.Mounts = []jobs.Mount{{Folder: "d", Target: "/"}} }), "mount-target"},
		{"port range", with(func(s *jobs.Spec) { s.Ports = []int{70000} }), "port"},
		{"restart always", with(func(s *jobs.Spec) { s.Restart = "always" }), "restart"},
		{"too many gpus", with(func(s *jobs.Spec) { s.GPUs = 9 }), "gpus"},
		{"gpu id absent", with(func(s *jobs.Spec) { s.GPUIDs = []int{8} }), "gpus"},
		{"gpu id twice", with(func(s *jobs.Spec) { s.GPUIDs = []int{1, 1} }), "gpus"},
		{"count and ids", with(func(s *jobs.Spec) { s.GPUs = 1; s.GPUIDs = []int{0} }), "gpus"},
		{"negative memory", with(func(s *jobs.Spec) { s.MemoryBytes = -1 }), "memory"},
		{"negative cpus", with(func(s *jobs.Spec) { s.CPUs = -2 }), "cpus"},
		{"nul in arg", with(func(s *jobs.Spec) { s.Cmd = []string{"a\x00b"} }), "size"},
		{"network none ok, other no", with(func(s *jobs.Spec) { s.NetworkMode = "none"; s.PidMode = "container:x" }), "no-host-namespaces"},
		{"ipc shareable", with(func(s *jobs.Spec) { s.IpcMode = "shareable" }), "no-host-namespaces"},
		{"cap add harmless", with(func(s *jobs.Spec) { s.CapAdd = []string{"CHOWN"} }), "no-extra-capabilities"},
		{"security opt anything", with(func(s *jobs.Spec) { s.SecurityOpt = []string{"no-new-privileges:false"} }), "no-security-opt"},
		{"port on ipv6 any", with(func(s *jobs.Spec) { s.PortBinds = []string{"[::]:80:80"} }), "loopback-ports-only"},
		{"port on localhost name", with(func(s *jobs.Spec) { s.PortBinds = []string{"localhost:80:80"} }), "loopback-ports-only"},
		{"port bind not a port", with(func(s *jobs.Spec) { s.PortBinds = []string{"127.0.0.1:80:http"} }), "port"},
		{"port bind udp", with(func(s *jobs.Spec) { s.PortBinds = []string{"127.0.0.1:53:53/udp"} }), "port"},
		{"port twice", with(func(s *jobs.Spec) { s.Ports = []int{80, 80} }), "port"},
		{"nvidia env", with(func(s *jobs.Spec) { s.Env = []string{"NVIDIA_VISIBLE_DEVICES=all"} }), "no-gpu-env"},
		{"nvidia env lowercase", with(func(s *jobs.Spec) { s.Env = []string{"nvidia_visible_devices=all"} }), "no-gpu-env"},
		{"env bad key", with(func(s *jobs.Spec) { s.Env = []string{"1A=x"} }), "env"},
		{"image with space", with(func(s *jobs.Spec) { s.Image = "busy box" }), "image-ref"},
		{"image too long", with(func(s *jobs.Spec) { s.Image = strings.Repeat("a", 300) }), "image-ref"},
		{"nan cpus", with(func(s *jobs.Spec) { s.CPUs = math.NaN() }), "cpus"},
		{"absurd cpus", with(func(s *jobs.Spec) { s.CPUs = 1e9 }), "cpus"},
		{"tiny memory", with(func(s *jobs.Spec) { s.MemoryBytes = 1024 }), "memory"},
		{"absurd memory", with(func(s *jobs.Spec) { s.MemoryBytes = 1 << 62 }), "memory"},
		{"negative shm", with(func(s *jobs.Spec) { s.ShmBytes = -1 }), "shm"},
		{"absurd shm", with(func(s *jobs.Spec) { s.ShmBytes = 1 << 62 }), "shm"},
		{"absurd gpu memory", with(func(s *jobs.Spec) { s.MinGPUMemBytes = 1 << 62 }), "gpus"},
		{"negative gpus", with(func(s *jobs.Spec) { s.GPUs = -1 }), "gpus"},
		{"negative gpu id", with(func(s *jobs.Spec) { s.GPUIDs = []int{-1} }), "gpus"},
		{"mount sys", with(func(s *jobs.Spec) { s.Mounts = []jobs.Mount{{Folder: "d", Target: "/sys"}} }), "mount-target"},
		{"mount dev via dots", with(func(s *jobs.Spec) { s.Mounts = []jobs.Mount{{Folder: "d", Target: "/data/../dev/x"}} }), "mount-target"},
		{"mount twice", with(func(s *jobs.Spec) { s.Mounts = []jobs.Mount{{Folder: "a", Target: "/d"}, {Folder: "b", Target: "/d/"}} }), "mount-target"},
		{"mount no folder", with(func(s *jobs.Spec) { s.Mounts = []jobs.Mount{{Target: "/d"}} }), "mount-target"},
		{"restart unless-stopped", with(func(s *jobs.Spec) { s.Restart = "unless-stopped" }), "restart"},
		{"bad name", with(func(s *jobs.Spec) { s.Name = "a b" }), "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate(tt.spec, 8)
			var re *jobs.RefusedError
			if !errors.As(err, &re) || re.Rule != tt.rule {
				t.Fatalf("Validate = %v, want rule %q", err, tt.rule)
			}
		})
	}
	var re *jobs.RefusedError
	if err := validate(with(func(s *jobs.Spec) { s.GPUs = 9 }), 8); !errors.As(err, &re) || !strings.Contains(err.Error(), `refused by rule "gpus": 9 GPUs asked: this machine has 8 GPUs`) {
		t.Errorf("too many GPUs: %v", err)
	}
	if err := validate(ok, 0); err != nil {
		t.Errorf("a plain spec refused: %v", err)
	}
	good := with(func(s *jobs.Spec) {
		s.GPUs, s.Env, s.Ports, s.Restart = 2, []string{"A=1"}, []int{8888}, "on-failure"
		s.Mounts = []jobs.Mount{{Folder: "data", Target: "/data", ReadWrite: true}}
		s.PortBinds = []string{"127.0.0.1:8888:8888", "127.0.0.1::6006/tcp"}
		s.NetworkMode, s.CPUs, s.MemoryBytes, s.ShmBytes, s.Name = "none", 2.5, 1<<30, 1<<30, "my-job_1.0"
		s.Image = "registry.lab:5000/team/img:v1.2@sha256:" + strings.Repeat("a", 64)
	})
	if err := validate(good, 8); err != nil {
		t.Errorf("a good spec refused: %v", err)
	}
}

func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"image":"busybox","cmd":["sh"]}`))
	f.Add([]byte(`{"image":"x","privileged":true}`))
	f.Add([]byte(`{"image":"x","binds":["/:/h"],"cap_add":["ALL"]}`))
	f.Add([]byte(`{"image":"x","gpus":3,"mounts":[{"folder":"a","target":"/a"}]}`))
	f.Add([]byte(`{"image":"x","port_binds":["127.0.0.1::80"],"env":["NVIDIA_VISIBLE_DEVICES=all"],"network_mode":"none"}`))
	f.Add([]byte(`{"image":"x","gpu_ids":[0,1,1],"cpus":1e300,"memory_bytes":-5,"restart":"always"}`))
	f.Add([]byte(`{"image":"x","mounts":[{"folder":"a","target":"/x/../proc"}],"security_opt":["seccomp=unconfined"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := jobs.DecodeSpec(bytes.NewReader(data))
		if err != nil {
			return
		}
		if validate(s, 4) != nil {
			return
		}
		if s.Privileged || len(s.CapAdd) > 0 || len(s.Devices) > 0 || len(s.SecurityOpt) > 0 || len(s.Binds) > 0 ||
			s.PidMode != "" || s.IpcMode != "" || s.UTSMode != "" || s.UsernsMode != "" ||
			(s.NetworkMode != "" && s.NetworkMode != "bridge" && s.NetworkMode != "none") || s.GPUs > 4 || len(s.GPUIDs) > 4 ||
			s.Restart != "" && s.Restart != "no" && s.Restart != "on-failure" {
			t.Fatalf("accepted a dangerous spec: %+v", s)
		}
		for _, b := range s.PortBinds {
			if !strings.HasPrefix(b, "127.0.0.1:") {
				t.Fatalf("accepted a port binding off the loopback: %q", b)
			}
		}
		for _, e := range s.Env {
			if strings.HasPrefix(strings.ToUpper(e), "NVIDIA_") || !strings.Contains(e, "=") {
				t.Fatalf("accepted env %q", e)
			}
		}
		for _, m := range s.Mounts {
			if t2 := path.Clean(m.Target); !path.IsAbs(m.Target) || underAny(t2, "/proc", "/sys", "/dev") || t2 == "/" {
				t.Fatalf("accepted mount target %q", m.Target)
			}
		}
		if s.MemoryBytes < 0 || s.ShmBytes < 0 || s.CPUs < 0 || s.GPUs < 0 {
			t.Fatalf("accepted negative resources: %+v", s)
		}
	})
}
