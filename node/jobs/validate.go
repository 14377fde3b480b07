package jobs

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// RefusedError is a request refused by a safety or sanity rule, or (when
// Forbidden) by who asks or the machine's policy; the message names the
// rule.
type RefusedError struct {
	Rule      string
	Detail    string
	Forbidden bool // an authorization or policy rule: HTTP 403 "forbidden"
}

func (e *RefusedError) Error() string {
	if e.Forbidden {
		return e.Rule + ": " + e.Detail
	}
	return fmt.Sprintf("refused by rule %q: %s", e.Rule, e.Detail)
}

func refuse(rule, format string, a ...any) error {
	return &RefusedError{Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

// imageRef is a loose check of a Docker image reference.
var imageRef = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$`)

// numericUser is a user a spec may name besides root.
var numericUser = regexp.MustCompile(`^[0-9]{1,10}(:[0-9]{1,10})?$`)

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
		if _, err := ParsePortBind(b); err != nil {
			return err
		}
	}
	for _, e := range s.Env {
		if k, _, _ := strings.Cut(e, "="); strings.HasPrefix(strings.ToUpper(k), "NVIDIA_") {
			return refuse("no-gpu-env", "%s: the NVIDIA runtime reads it to pick GPUs; GPUs are given by the GPU ledger", k)
		}
	}
	return nil
}

// ParsePortBind reads a raw port binding, "127.0.0.1:HOST:CONTAINER" or
// "127.0.0.1::CONTAINER" (an optional "/tcp" suffix), and returns the
// container port. Anything not on the loopback is refused. The node picks
// the loopback port itself; a tunnel reaches it.
func ParsePortBind(b string) (int, error) {
	parts := strings.Split(strings.TrimSuffix(b, "/tcp"), ":")
	if len(parts) != 3 || parts[0] != "127.0.0.1" {
		return 0, refuse("loopback-ports-only", "port binding %q: ports are published on the machine's loopback only (127.0.0.1::PORT)", b)
	}
	if parts[1] != "" {
		if _, err := strconv.ParseUint(parts[1], 10, 16); err != nil {
			return 0, refuse("port", "port binding %q: %q is not a port", b, parts[1])
		}
	}
	p, err := strconv.Atoi(parts[2])
	if err != nil || p <= 0 || p > 65535 {
		return 0, refuse("port", "port binding %q: %q is not a TCP port", b, parts[2])
	}
	return p, nil
}

// validateImage refuses what is not an image reference (name[:tag][@digest]).
func validateImage(ref string) error {
	if ref == "" || len(ref) > 255 || !imageRef.MatchString(ref) {
		return refuse("image-ref", "%q is not an image reference", ref)
	}
	return nil
}

func validateShape(s Spec) error {
	if err := validateImage(s.Image); err != nil {
		return err
	}
	if len(s.Name) > 64 || (s.Name != "" && !envKeyOrName(s.Name)) {
		return refuse("name", "%q: a name is up to 64 letters, digits, '.', '_' or '-'", s.Name)
	}
	if len(s.Cmd) > maxCmdArgs || len(s.Env) > maxEnv || len(s.Mounts) > maxMounts || len(s.Ports) > maxPorts || len(s.PortBinds) > maxPorts {
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
	if err := validateMounts(s.Mounts); err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, p := range s.Ports {
		if p <= 0 || p > 65535 {
			return refuse("port", "port %d is out of range", p)
		}
		if seen[p] {
			return refuse("port", "port %d is listed twice", p)
		}
		seen[p] = true
	}
	if s.User != "" && s.User != "root" && !numericUser.MatchString(s.User) {
		return refuse("user", "user %q: ask for root, or a numeric uid or uid:gid", s.User)
	}
	if s.Restart != "" && s.Restart != "no" && s.Restart != "on-failure" {
		return refuse("restart", "restart %q: use no or on-failure", s.Restart)
	}
	return nil
}

func validateMounts(ms []Mount) error {
	targets := map[string]bool{}
	for _, m := range ms {
		t := path.Clean(m.Target)
		if m.Folder == "" || !path.IsAbs(m.Target) || t == "/" || underAny(t, "/proc", "/sys", "/dev", "/etc") {
			return refuse("mount-target", "mount %s:%s: the target must be an absolute path outside /proc, /sys, /dev and /etc", m.Folder, m.Target)
		}
		if targets[t] {
			return refuse("mount-target", "mount %s:%s: two mounts on one path", m.Folder, m.Target)
		}
		targets[t] = true
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

// maxBytes bounds memory, shm and GPU memory sizes (1 PiB): anything above
// is a typo.
const maxBytes = 1 << 50

func validateResources(s Spec, gpusOnNode int) error {
	switch {
	case !(s.CPUs >= 0 && s.CPUs <= 4096): // NaN fails too
		return refuse("cpus", "%v CPUs is out of range (0 to 4096)", s.CPUs)
	case s.MemoryBytes < 0 || (s.MemoryBytes > 0 && s.MemoryBytes < 6<<20) || s.MemoryBytes > maxBytes:
		return refuse("memory", "a memory limit must be between 6 MiB and 1 PiB")
	case s.ShmBytes < 0 || s.ShmBytes > maxBytes:
		return refuse("shm", "the shm size must be between 0 and 1 PiB")
	case s.MinGPUMemBytes > maxBytes:
		return refuse("gpus", "%d bytes of GPU memory is more than any GPU has", s.MinGPUMemBytes)
	case s.GPUs < 0:
		return refuse("gpus", "the GPU count cannot be negative")
	case s.GPUs > 0 && len(s.GPUIDs) > 0:
		return refuse("gpus", "ask for a GPU count or GPU indexes, not both")
	case s.GPUs > gpusOnNode || len(s.GPUIDs) > gpusOnNode:
		return refuse("gpus", "%d GPUs asked: this machine has %d GPUs", max(s.GPUs, len(s.GPUIDs)), gpusOnNode)
	}
	if err := validateMIG(s); err != nil {
		return err
	}
	seen := map[int]bool{}
	for _, i := range s.GPUIDs {
		if i < 0 || i >= gpusOnNode {
			return refuse("gpus", "GPU %d does not exist: this machine has %d GPUs", i, gpusOnNode)
		}
		if seen[i] {
			return refuse("gpus", "GPU %d is listed twice", i)
		}
		seen[i] = true
	}
	return nil
}
