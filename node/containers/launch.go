package containers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
)

// Capabilities are what root keeps in a container where the engine remaps
// users (its uid 0 is an unprivileged host uid): Docker's defaults minus
// those that reach past the container (MKNOD makes device nodes, NET_RAW
// forges packets, AUDIT_WRITE writes the host's audit log) and FSETID. It
// lets ordinary images chown their files and drop to a user. A job that
// runs as a user other than root (every job, on an engine that does not
// remap users, unless the machine's policy allows root) keeps none.
var Capabilities = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL",
	"SETGID", "SETUID", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT"}

// HostRootCapabilities are what root keeps where it is the host's root
// (no userns-remap; allowed by the machine's policy only): none that acts
// on files or users.
var HostRootCapabilities = []string{"KILL", "NET_BIND_SERVICE", "SYS_CHROOT"}

// Create creates a hardened, labelled container for l, not started. If it
// cannot read back what it created, it removes it.
//
// The container joins a network of its own (see jobNetwork), created with
// it and removed with it; its ports are published nowhere: the agent
// reaches them at the container's address (Container.Addr). Before the
// first container, the host guard keeps jobs off this host (guardHost).
func (r *Runtime) Create(ctx context.Context, l Launch) (Container, error) {
	cfg, host, err := r.configs(l)
	if err != nil {
		return Container{}, err
	}
	mode, _ := networkMode(l.Network) // configs checked it
	if err := r.guardHost(); err != nil {
		return Container{}, fmt.Errorf("create container %s: %w", describe(l), err)
	}
	resp, err := r.createOnNetwork(ctx, l, mode, cfg, host)
	if err != nil {
		return Container{}, err
	}
	c, err := r.inspect(ctx, resp.ID)
	if err != nil {
		r.discard(ctx, resp.ID)
		return Container{}, err
	}
	return c, nil
}

// createOnNetwork creates the container on its job network, which no
// dropNetwork removes meanwhile; a network made for a container that
// could not be created goes again.
func (r *Runtime) createOnNetwork(ctx context.Context, l Launch, mode string, cfg *container.Config, host *container.HostConfig) (container.CreateResponse, error) {
	r.netMu.Lock()
	netName, err := r.jobNetwork(ctx, l, mode)
	if err == nil {
		err = r.keepGuardFirst() // creating a network, the engine puts its rules above the guard's
	}
	if err != nil {
		r.netMu.Unlock()
		return container.CreateResponse{}, err
	}
	host.NetworkMode = container.NetworkMode(netName)
	cctx, cancel := r.bounded(ctx)
	defer cancel()
	resp, err := r.api.ContainerCreate(cctx, cfg, host, nil, nil, l.Name)
	r.netMu.Unlock()
	if err != nil {
		r.dropNetwork(context.WithoutCancel(ctx), netName)
		return resp, fmt.Errorf("create container %s: %w", describe(l), explain(err, l.Image))
	}
	return resp, nil
}

// Start starts a created (or stopped) container. A container that fails to
// start is left for the caller: Run is the call that cleans up.
func (r *Runtime) Start(ctx context.Context, id string) (Container, error) {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return Container{}, err
	}
	sctx, cancel := r.bounded(ctx)
	defer cancel()
	if err := r.api.ContainerStart(sctx, id, container.StartOptions{}); err != nil {
		return Container{}, fmt.Errorf("start container %s: %w", shortID(id), explain(err, ins.Config.Image))
	}
	return r.inspect(ctx, id)
}

// Run creates and starts a container; if anything fails, nothing is left.
func (r *Runtime) Run(ctx context.Context, l Launch) (Container, error) {
	c, err := r.Create(ctx, l)
	if err != nil {
		return Container{}, err
	}
	started, err := r.Start(ctx, c.ID)
	if err != nil {
		r.discard(ctx, c.ID)
		return Container{}, err
	}
	return started, nil
}

// discard force-removes a container this runtime just created, and its
// network, even when ctx is already cancelled.
func (r *Runtime) discard(ctx context.Context, id string) {
	rmctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ins, err := r.api.ContainerInspect(rmctx, id)
	r.api.ContainerRemove(rmctx, id, container.RemoveOptions{Force: true}) // best effort: the caller reports the first error
	if err == nil && ins.ContainerJSONBase != nil {
		r.dropNetwork(rmctx, ownNetwork(ins))
	}
}

// configs builds the container's configuration with the hardening that no
// request can change.
func (r *Runtime) configs(l Launch) (*container.Config, *container.HostConfig, error) {
	exposed, err := exposedPorts(l.Ports)
	if err != nil {
		return nil, nil, err
	}
	if _, err := networkMode(l.Network); err != nil {
		return nil, nil, err
	}
	binds, err := bindSpecs(l.Binds)
	if err != nil {
		return nil, nil, err
	}
	restart, err := r.restartPolicy(l.Restart)
	if err != nil {
		return nil, nil, err
	}
	user, root, err := r.runAs(l)
	if err != nil {
		return nil, nil, err
	}
	cfg := &container.Config{Image: l.Image, Cmd: l.Cmd, Env: l.Env, Labels: r.labels(l.Labels), ExposedPorts: exposed, User: user}
	host := r.hardened()
	switch {
	case root && r.remap:
		host.CapAdd = slices.Clone(Capabilities)
	case root:
		host.CapAdd = slices.Clone(HostRootCapabilities)
	}
	if l.LogMaxBytes > 0 {
		host.LogConfig = container.LogConfig{Type: "json-file", Config: map[string]string{
			"max-size": strconv.FormatInt(max(l.LogMaxBytes/2, 1<<20), 10), "max-file": "2"}}
	}
	host.Mounts, host.RestartPolicy = binds, restart
	host.ShmSize, host.NanoCPUs, host.Memory = l.ShmBytes, int64(l.CPUs*1e9), l.MemoryBytes
	if len(l.GPUs) > 0 {
		host.DeviceRequests = []container.DeviceRequest{{
			Driver: "nvidia", DeviceIDs: l.GPUs, Capabilities: [][]string{{"gpu"}},
		}}
	}
	return cfg, host, nil
}

// hardened is the HostConfig every container starts from: init as PID 1,
// no new privileges, every capability dropped (configs gives root a few
// back), the seccomp profile that refuses setuid and setgid bits, a pids
// limit, no network until Create gives it its own, private IPC, no host
// namespaces, no devices, no published port.
func (r *Runtime) hardened() *container.HostConfig {
	init := true
	pids := r.cfg.PidsLimit
	return &container.HostConfig{
		Init:        &init,
		SecurityOpt: []string{"no-new-privileges:true", "seccomp=" + Seccomp()},
		CapDrop:     []string{"ALL"},
		Privileged:  false,
		NetworkMode: network.NetworkNone,
		IpcMode:     container.IPCModePrivate,
		Resources:   container.Resources{PidsLimit: &pids},
	}
}

// numericUser is "uid:gid", both numbers: what a job runs as on an engine
// that does not remap users (a name would be looked up in the image's own
// /etc/passwd, which the job's author writes).
var numericUser = regexp.MustCompile(`^[0-9]{1,10}:[0-9]{1,10}$`)

// user is the user l runs as ("uid:gid"; "" the image's own).
func (r *Runtime) user(l Launch) (string, error) {
	u, _, err := r.runAs(l)
	return u, err
}

// runAs is the user l runs as, and whether it is (or may be) root. Root is
// refused on an engine that does not remap users unless l.AllowRoot.
func (r *Runtime) runAs(l Launch) (string, bool, error) {
	u := l.User
	if u == "" && !r.remap && !l.AllowRoot {
		u = r.cfg.JobUser
	}
	name, group, _ := strings.Cut(u, ":")
	root := u == "" || name == "root" || name == "0" || group == "root" || group == "0"
	switch {
	case r.remap || l.AllowRoot:
		return u, root, nil
	case root:
		return "", false, fmt.Errorf("run %s as %q: this engine does not remap users, so root in the container would be root on the host", describe(l), u)
	case !numericUser.MatchString(u):
		return "", false, fmt.Errorf("run %s as %q: on this engine a job runs as a numeric uid:gid", describe(l), u)
	}
	return u, false, nil
}

// labels adds labpool's own labels to the caller's; they cannot be
// overridden.
func (r *Runtime) labels(in map[string]string) map[string]string {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]string{}
	}
	out[LabelManaged] = "true"
	if r.cfg.Node != "" {
		out[LabelNode] = r.cfg.Node
	}
	return out
}

// exposedPorts lists the TCP ports a job offers to tunnels. None is
// published on the host: the agent dials them at the container's address.
func exposedPorts(ports []int) (nat.PortSet, error) {
	exposed := nat.PortSet{}
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			return nil, fmt.Errorf("publish port %d: out of range", p)
		}
		exposed[nat.Port(strconv.Itoa(p)+"/tcp")] = struct{}{}
	}
	return exposed, nil
}

// bindSpecs turns checked binds into typed bind mounts (any character
// may appear in a path; nothing propagates back to the host).
func bindSpecs(binds []Bind) ([]mount.Mount, error) {
	var out []mount.Mount
	for _, b := range binds {
		if !strings.HasPrefix(b.HostPath, "/") || !strings.HasPrefix(b.Target, "/") {
			return nil, fmt.Errorf("mount %s:%s: both paths must be absolute", b.HostPath, b.Target)
		}
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: b.HostPath, Target: b.Target, ReadOnly: b.ReadOnly,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	return out, nil
}

func (r *Runtime) restartPolicy(name string) (container.RestartPolicy, error) {
	switch name {
	case "", "no":
		return container.RestartPolicy{Name: container.RestartPolicyDisabled}, nil
	case "on-failure":
		return container.RestartPolicy{Name: container.RestartPolicyOnFailure, MaximumRetryCount: r.cfg.MaxRestarts}, nil
	}
	return container.RestartPolicy{}, fmt.Errorf("restart policy %q: use no or on-failure", name)
}

// explain turns Docker's errors into ones a researcher can act on.
func explain(err error, img string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	case img != "" && (strings.Contains(msg, "No such image") || strings.Contains(msg, "pull access denied") ||
		strings.Contains(msg, "not found") && strings.Contains(msg, "image")):
		return fmt.Errorf("image %s is not on this machine: load it with `labpool image load` or pull it with `labpool image pull`", img)
	case strings.Contains(msg, "could not select device driver"):
		return errors.New("this machine's Docker has no NVIDIA runtime (install nvidia-container-toolkit and restart dockerd): it cannot give GPUs to containers")
	case strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use"):
		return fmt.Errorf("a port is already in use on this machine: %v", err)
	}
	return err
}

// describe names a launch in errors: its name, or its image.
func describe(l Launch) string {
	if l.Name != "" {
		return strconv.Quote(l.Name)
	}
	return "of " + l.Image
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
