package jobs

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// RefusedError is a request refused by a safety or sanity rule; the
// message names the rule.
type RefusedError struct {
	Rule   string
	Detail string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused by rule %q: %s", e.Rule, e.Detail)
}

func refuse(rule, format string, a ...any) error {
	return &RefusedError{Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

// imageRef is a loose check of a Docker image reference.
var imageRef = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$`)

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Limits on a request's sizes.
const (
	maxCmdArgs = 256
	maxEnv     = 256
	maxMounts  = 32
	maxPorts   = 32
	maxArgLen  = 16 << 10
)

// Validate refuses every option that could give a member root on this
// host, and malformed requests, before any Docker call. gpusOnNode is how
// many GPUs this machine has.
func Validate(s Spec, gpusOnNode int) error {
	if err := validateDangerous(s); err != nil {
		return err
	}
	if err := validateShape(s); err != nil {
		return err
	}
	return validateResources(s, gpusOnNode)
}

func validateDangerous(s Spec) error {
	switch {
	case s.Privileged:
		return refuse("no-privileged", "privileged containers can take over the host")
	case s.NetworkMode != "" && s.NetworkMode != "bridge" && s.NetworkMode != "none":
		return refuse("no-host-namespaces", "network mode %q: only the default bridge (or none) is allowed", s.NetworkMode)
	case s.PidMode != "":
		return refuse("no-host-namespaces", "pid mode %q shares another namespace", s.PidMode)
	case s.IpcMode != "":
		return refuse("no-host-namespaces", "ipc mode %q shares another namespace", s.IpcMode)
	case s.UTSMode != "":
		return refuse("no-host-namespaces", "uts mode %q shares another namespace", s.UTSMode)
	case s.UsernsMode != "":
		return refuse("no-host-namespaces", "userns mode %q is not allowed", s.UsernsMode)
	case len(s.CapAdd) > 0:
		return refuse("no-extra-capabilities", "capabilities %v: containers get a fixed small set", s.CapAdd)
	case len(s.Devices) > 0:
		return refuse("no-devices", "devices %v: GPUs are given by the GPU ledger, nothing else", s.Devices)
	case len(s.SecurityOpt) > 0:
		return refuse("no-security-opt", "security options %v: seccomp and AppArmor stay confined, no-new-privileges stays on", s.SecurityOpt)
	case len(s.Binds) > 0:
		return refuse("shared-folders-only", "host paths %v: mount shared folders with --mount FOLDER:/path", s.Binds)
	}
	for _, b := range s.PortBinds {
		host, _, ok := strings.Cut(b, ":")
		if !ok || host != "127.0.0.1" {
			return refuse("loopback-ports-only", "port binding %q: ports are published on the machine's loopback only", b)
		}
	}
	return nil
}

func validateShape(s Spec) error {
	if s.Image == "" || len(s.Image) > 255 || !imageRef.MatchString(s.Image) {
		return refuse("image-ref", "%q is not an image reference", s.Image)
	}
	if len(s.Name) > 64 || (s.Name != "" && !envKeyOrName(s.Name)) {
		return refuse("name", "%q: a name is up to 64 letters, digits, '.', '_' or '-'", s.Name)
	}
	if len(s.Cmd) > maxCmdArgs || len(s.Env) > maxEnv || len(s.Mounts) > maxMounts || len(s.Ports) > maxPorts {
		return refuse("size", "too many arguments, variables, mounts or ports")
	}
	for _, a := range append(slices.Clone(s.Cmd), s.Env...) {
		if len(a) > maxArgLen || strings.ContainsRune(a, 0) {
			return refuse("size", "an argument is over %d bytes or holds a NUL", maxArgLen)
		}
	}
	for _, e := range s.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || !envKey.MatchString(k) {
			return refuse("env", "%q is not K=V", e)
		}
	}
	for _, m := range s.Mounts {
		t := path.Clean(m.Target)
		if m.Folder == "" || !path.IsAbs(m.Target) || t == "/" || underAny(t, "/proc", "/sys", "/dev", "/etc") {
			return refuse("mount-target", "mount %s:%s: the target must be an absolute path outside /proc, /sys, /dev and /etc", m.Folder, m.Target)
		}
	}
	for _, p := range s.Ports {
		if p <= 0 || p > 65535 {
			return refuse("port", "port %d is out of range", p)
		}
	}
	if s.Restart != "" && s.Restart != "no" && s.Restart != "on-failure" {
		return refuse("restart", "restart %q: use no or on-failure", s.Restart)
	}
	return nil
}

func envKeyOrName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func underAny(p string, roots ...string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func validateResources(s Spec, gpusOnNode int) error {
	switch {
	case s.CPUs < 0 || s.CPUs > 4096:
		return refuse("cpus", "%v CPUs is out of range", s.CPUs)
	case s.MemoryBytes < 0 || (s.MemoryBytes > 0 && s.MemoryBytes < 6<<20):
		return refuse("memory", "a memory limit must be at least 6 MiB")
	case s.ShmBytes < 0:
		return refuse("shm", "the shm size cannot be negative")
	case s.GPUs < 0:
		return refuse("gpus", "the GPU count cannot be negative")
	case s.GPUs > 0 && len(s.GPUIDs) > 0:
		return refuse("gpus", "ask for a GPU count or GPU indexes, not both")
	case s.GPUs > gpusOnNode:
		return refuse("gpus", "%d GPUs asked, this machine has %d", s.GPUs, gpusOnNode)
	}
	seen := map[int]bool{}
	for _, i := range s.GPUIDs {
		if i < 0 || i >= gpusOnNode {
			return refuse("gpus", "GPU %d does not exist: this machine has %d", i, gpusOnNode)
		}
		if seen[i] {
			return refuse("gpus", "GPU %d is listed twice", i)
		}
		seen[i] = true
	}
	return nil
}
