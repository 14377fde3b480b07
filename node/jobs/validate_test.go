package jobs

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestValidateRefusals(t *testing.T) {
	ok := Spec{Image: "labpool-test/busybox:1", Cmd: []string{"sleep", "1"}}
	with := func(f func(*Spec)) Spec { s := ok; f(&s); return s }
	tests := []struct {
		name string
		spec Spec
		rule string
	}{
		{"privileged", with(func(s *Spec) { s.Privileged = true }), "no-privileged"},
		{"host network", with(func(s *Spec) { s.NetworkMode = "host" }), "no-host-namespaces"},
		{"container network", with(func(s *Spec) { s.NetworkMode = "container:abc" }), "no-host-namespaces"},
		{"host pid", with(func(s *Spec) { s.PidMode = "host" }), "no-host-namespaces"},
		{"host ipc", with(func(s *Spec) { s.IpcMode = "host" }), "no-host-namespaces"},
		{"host uts", with(func(s *Spec) { s.UTSMode = "host" }), "no-host-namespaces"},
		{"host userns", with(func(s *Spec) { s.UsernsMode = "host" }), "no-host-namespaces"},
		{"cap add", with(func(s *Spec) { s.CapAdd = []string{"SYS_ADMIN"} }), "no-extra-capabilities"},
		{"device", with(func(s *Spec) { s.Devices = []string{"/dev/sda"} }), "no-devices"},
		{"seccomp unconfined", with(func(s *Spec) { s.SecurityOpt = []string{"seccomp=unconfined"} }), "no-security-opt"},
		{"apparmor unconfined", with(func(s *Spec) { s.SecurityOpt = []string{"apparmor=unconfined"} }), "no-security-opt"},
		{"bind root", with(func(s *Spec) { s.Binds = []string{"/:/host"} }), "shared-folders-only"},
		{"bind docker socket", with(func(s *Spec) { s.Binds = []string{"/var/run/docker.sock:/s"} }), "shared-folders-only"},
		{"port on all", with(func(s *Spec) { s.PortBinds = []string{"0.0.0.0:8888:8888"} }), "loopback-ports-only"},
		{"port no host", with(func(s *Spec) { s.PortBinds = []string{"8888"} }), "loopback-ports-only"},
		{"empty image", with(func(s *Spec) { s.Image = "" }), "image-ref"},
		{"bad image", with(func(s *Spec) { s.Image = "UPPER/../x" }), "image-ref"},
		{"env not kv", with(func(s *Spec) { s.Env = []string{"NOVALUE"} }), "env"},
		{"mount to proc", with(func(s *Spec) { s.Mounts = []Mount{{Folder: "d", Target: "/proc/x"}} }), "mount-target"},
		{"mount relative", with(func(s *Spec) { s.Mounts = []Mount{{Folder: "d", Target: "data"}} }), "mount-target"},
		{"mount root", with(func(s *Spec) { s.Mounts = []Mount{{Folder: "d", Target: "/"}} }), "mount-target"},
		{"port range", with(func(s *Spec) { s.Ports = []int{70000} }), "port"},
		{"restart always", with(func(s *Spec) { s.Restart = "always" }), "restart"},
		{"too many gpus", with(func(s *Spec) { s.GPUs = 9 }), "gpus"},
		{"gpu id absent", with(func(s *Spec) { s.GPUIDs = []int{8} }), "gpus"},
		{"gpu id twice", with(func(s *Spec) { s.GPUIDs = []int{1, 1} }), "gpus"},
		{"count and ids", with(func(s *Spec) { s.GPUs = 1; s.GPUIDs = []int{0} }), "gpus"},
		{"negative memory", with(func(s *Spec) { s.MemoryBytes = -1 }), "memory"},
		{"negative cpus", with(func(s *Spec) { s.CPUs = -2 }), "cpus"},
		{"nul in arg", with(func(s *Spec) { s.Cmd = []string{"a\x00b"} }), "size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.spec, 8)
			var re *RefusedError
			if !errors.As(err, &re) || re.Rule != tt.rule {
				t.Fatalf("Validate = %v, want rule %q", err, tt.rule)
			}
		})
	}
	if err := Validate(ok, 0); err != nil {
		t.Errorf("a plain spec refused: %v", err)
	}
	good := with(func(s *Spec) {
		s.GPUs, s.Env, s.Ports, s.Restart = 2, []string{"A=1"}, []int{8888}, "on-failure"
		s.Mounts = []Mount{{Folder: "data", Target: "/data", ReadWrite: true}}
		s.PortBinds = []string{"127.0.0.1:8888:8888"}
	})
	if err := Validate(good, 8); err != nil {
		t.Errorf("a good spec refused: %v", err)
	}
}

func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"image":"busybox","cmd":["sh"]}`))
	f.Add([]byte(`{"image":"x","privileged":true}`))
	f.Add([]byte(`{"image":"x","binds":["/:/h"],"cap_add":["ALL"]}`))
	f.Add([]byte(`{"image":"x","gpus":3,"mounts":[{"folder":"a","target":"/a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Spec
		if json.Unmarshal(data, &s) != nil {
			return
		}
		if Validate(s, 4) != nil {
			return
		}
		if s.Privileged || len(s.CapAdd) > 0 || len(s.Devices) > 0 || len(s.SecurityOpt) > 0 || len(s.Binds) > 0 ||
			s.PidMode != "" || s.IpcMode != "" || s.UTSMode != "" || s.UsernsMode != "" ||
			(s.NetworkMode != "" && s.NetworkMode != "bridge" && s.NetworkMode != "none") || s.GPUs > 4 {
			t.Fatalf("accepted a dangerous spec: %+v", s)
		}
	})
}
