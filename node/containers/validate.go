package containers

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/jobs"
)

// ValidateSpec refuses every container option of s that could give a
// member root on this host (privileged mode, host namespaces, capabilities,
// devices, security options, raw binds, ports off the loopback), and
// malformed ones (user, restart, shm). The manager calls it, through the
// Executor's ValidateTask, before any Docker call.
func ValidateSpec(s jobs.Spec) error {
	if err := validateDangerous(s.ContainerSpec); err != nil {
		return err
	}
	return validateOptions(s.ContainerSpec)
}

func refuse(rule, format string, a ...any) error {
	return &jobs.RefusedError{Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

func validateDangerous(s jobs.ContainerSpec) error {
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
	case len(s.PortBinds) > maxPortBinds:
		return refuse("size", "too many arguments, variables, mounts or ports")
	}
	for _, b := range s.PortBinds {
		if _, err := ParsePortBind(b); err != nil {
			return err
		}
	}
	return nil
}

// maxPortBinds bounds a spec's raw port bindings.
const maxPortBinds = 32

// specUser is a user a spec may name besides root.
var specUser = regexp.MustCompile(`^[0-9]{1,10}(:[0-9]{1,10})?$`)

func validateOptions(s jobs.ContainerSpec) error {
	switch {
	case s.User != "" && s.User != "root" && !specUser.MatchString(s.User):
		return refuse("user", "user %q: ask for root, or a numeric uid or uid:gid", s.User)
	case s.Restart != "" && s.Restart != "no" && s.Restart != "on-failure":
		return refuse("restart", "restart %q: use no or on-failure", s.Restart)
	case s.ShmBytes < 0 || s.ShmBytes > jobs.MaxBytes:
		return refuse("shm", "the shm size must be between 0 and 1 PiB")
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
