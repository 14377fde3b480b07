package containers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ErrNoDocker means the Docker engine cannot be reached.
var ErrNoDocker = errors.New("docker engine not reachable")

// ErrNotManaged means a container is not labpool's: it is never touched.
var ErrNotManaged = errors.New("container is not managed by labpool")

// dockerAPI is the part of the Docker client the runtime uses.
type dockerAPI interface {
	Ping(ctx context.Context) (types.Ping, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, id string, options container.StartOptions) error
	ContainerStop(ctx context.Context, id string, options container.StopOptions) error
	ContainerRemove(ctx context.Context, id string, options container.RemoveOptions) error
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
	ContainerList(ctx context.Context, options container.ListOptions) ([]container.Summary, error)
	ContainerLogs(ctx context.Context, id string, options container.LogsOptions) (io.ReadCloser, error)
	ContainerStatsOneShot(ctx context.Context, id string) (container.StatsResponseReader, error)
	ContainerTop(ctx context.Context, id string, arguments []string) (container.TopResponse, error)
	Events(ctx context.Context, options events.ListOptions) (<-chan events.Message, <-chan error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (image.LoadResponse, error)
	ImagePull(ctx context.Context, ref string, options image.PullOptions) (io.ReadCloser, error)
	Close() error
}

var _ dockerAPI = (*client.Client)(nil)

// Config tunes the runtime.
type Config struct {
	// Host is the engine's address, e.g. "unix:///run/docker.sock"; ""
	// means DOCKER_HOST or Docker's default.
	Host string
	// PidsLimit caps the processes of one container.
	PidsLimit int64
	// MaxRestarts bounds restarts under the on-failure policy.
	MaxRestarts int
	// Node, when set, is this node's device ID: List returns only
	// containers labelled with it, so agents sharing an engine never adopt
	// each other's containers.
	Node string
}

// DefaultConfig returns the settings the agent uses.
func DefaultConfig() Config {
	return Config{PidsLimit: 4096, MaxRestarts: 5}
}

// Capabilities kept in every container: what ordinary images need to
// change file owners and drop to a user; nothing that reaches the host.
var Capabilities = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT"}

// Runtime runs labpool's containers on one Docker engine.
type Runtime struct {
	cfg Config
	api dockerAPI
}

// Open connects to the engine and checks that it answers.
func Open(ctx context.Context, cfg Config) (*Runtime, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	c, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	r := newRuntime(cfg, c)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Ping(pctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w at %s: %v", ErrNoDocker, c.DaemonHost(), err)
	}
	c.NegotiateAPIVersion(pctx)
	return r, nil
}

func newRuntime(cfg Config, api dockerAPI) *Runtime {
	if cfg.PidsLimit <= 0 {
		cfg.PidsLimit = DefaultConfig().PidsLimit
	}
	return &Runtime{cfg: cfg, api: api}
}

// Close releases the client.
func (r *Runtime) Close() error { return r.api.Close() }

// Ping checks that the engine answers.
func (r *Runtime) Ping(ctx context.Context) error {
	if _, err := r.api.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	return nil
}

// Create creates a hardened, labelled container for l, not started.
func (r *Runtime) Create(ctx context.Context, l Launch) (Container, error) {
	cfg, host, err := r.configs(l)
	if err != nil {
		return Container{}, err
	}
	resp, err := r.api.ContainerCreate(ctx, cfg, host, nil, nil, l.Name)
	if err != nil {
		return Container{}, explain(err, l.Image)
	}
	return r.inspect(ctx, resp.ID)
}

// Run creates and starts a container; if anything fails, nothing is left.
func (r *Runtime) Run(ctx context.Context, l Launch) (Container, error) {
	c, err := r.Create(ctx, l)
	if err != nil {
		return Container{}, err
	}
	started, err := r.Start(ctx, c.ID)
	if err != nil {
		rmctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		r.api.ContainerRemove(rmctx, c.ID, container.RemoveOptions{Force: true})
		return Container{}, err
	}
	return started, nil
}

// configs builds the container's configuration with the hardening that no
// request can change.
func (r *Runtime) configs(l Launch) (*container.Config, *container.HostConfig, error) {
	labels := map[string]string{}
	for k, v := range l.Labels {
		labels[k] = v
	}
	labels[LabelManaged] = "true"
	exposed := nat.PortSet{}
	bindings := nat.PortMap{}
	for _, p := range l.Ports {
		if p <= 0 || p > 65535 {
			return nil, nil, fmt.Errorf("port %d is out of range", p)
		}
		port := nat.Port(strconv.Itoa(p) + "/tcp")
		exposed[port] = struct{}{}
		bindings[port] = []nat.PortBinding{{HostIP: "127.0.0.1", HostPort: ""}}
	}
	cfg := &container.Config{Image: l.Image, Cmd: l.Cmd, Env: l.Env, Labels: labels, ExposedPorts: exposed}
	init := true
	pids := r.cfg.PidsLimit
	host := &container.HostConfig{
		Init:          &init,
		SecurityOpt:   []string{"no-new-privileges:true"},
		CapDrop:       []string{"ALL"},
		CapAdd:        Capabilities,
		Privileged:    false,
		NetworkMode:   "bridge",
		PortBindings:  bindings,
		ShmSize:       l.ShmBytes,
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Resources: container.Resources{
			NanoCPUs:  int64(l.CPUs * 1e9),
			Memory:    l.MemoryBytes,
			PidsLimit: &pids,
		},
	}
	if l.Restart == "on-failure" {
		host.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyOnFailure, MaximumRetryCount: r.cfg.MaxRestarts}
	}
	for _, b := range l.Binds {
		if !strings.HasPrefix(b.HostPath, "/") || !strings.HasPrefix(b.Target, "/") {
			return nil, nil, fmt.Errorf("mount %s:%s: both paths must be absolute", b.HostPath, b.Target)
		}
		mode := "rw"
		if b.ReadOnly {
			mode = "ro"
		}
		host.Binds = append(host.Binds, b.HostPath+":"+b.Target+":"+mode)
	}
	if len(l.GPUs) > 0 {
		host.DeviceRequests = []container.DeviceRequest{{
			Driver: "nvidia", DeviceIDs: l.GPUs, Capabilities: [][]string{{"gpu"}},
		}}
	}
	return cfg, host, nil
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
	case strings.Contains(msg, "No such image") || strings.Contains(msg, "not found") && strings.Contains(msg, "image"):
		return fmt.Errorf("image %s is not on this machine: copy it with `labpool image load` or `labpool image pull`", img)
	case strings.Contains(msg, "could not select device driver"):
		return errors.New("this machine's Docker has no NVIDIA runtime (install nvidia-container-toolkit): cannot give GPUs to containers")
	case strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use"):
		return fmt.Errorf("a port is in use on this machine: %v", err)
	}
	return err
}

// managed inspects id and refuses it unless it carries labpool's label.
func (r *Runtime) managed(ctx context.Context, id string) (container.InspectResponse, error) {
	ins, err := r.api.ContainerInspect(ctx, id)
	if err != nil {
		return ins, explain(err, "")
	}
	if ins.Config == nil || ins.Config.Labels[LabelManaged] != "true" {
		return ins, fmt.Errorf("%w: %s", ErrNotManaged, id)
	}
	return ins, nil
}

// Start starts a created container.
func (r *Runtime) Start(ctx context.Context, id string) (Container, error) {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return Container{}, err
	}
	if err := r.api.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return Container{}, explain(err, ins.Config.Image)
	}
	return r.inspect(ctx, id)
}

// Stop stops a container, killing it after timeout.
func (r *Runtime) Stop(ctx context.Context, id string, timeout time.Duration) error {
	if _, err := r.managed(ctx, id); err != nil {
		return err
	}
	secs := int(timeout.Seconds())
	return explain(r.api.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}), "")
}

// Remove removes a container, stopping it first if needed.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	if _, err := r.managed(ctx, id); err != nil {
		return err
	}
	return explain(r.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}), "")
}

// Inspect reports one labpool container.
func (r *Runtime) Inspect(ctx context.Context, id string) (Container, error) {
	return r.inspect(ctx, id)
}

func (r *Runtime) inspect(ctx context.Context, id string) (Container, error) {
	ins, err := r.managed(ctx, id)
	if err != nil {
		return Container{}, err
	}
	return fromInspect(ins), nil
}

func fromInspect(ins container.InspectResponse) Container {
	c := Container{ID: ins.ID, Name: strings.TrimPrefix(ins.Name, "/"), Ports: map[int]int{}}
	if ins.Config != nil {
		c.Image, c.Labels = ins.Config.Image, ins.Config.Labels
	}
	if st := ins.State; st != nil {
		c.State, c.Running, c.ExitCode, c.OOMKilled, c.Error = string(st.Status), st.Running, st.ExitCode, st.OOMKilled, st.Error
		c.Started, _ = time.Parse(time.RFC3339Nano, st.StartedAt)
		c.Finished, _ = time.Parse(time.RFC3339Nano, st.FinishedAt)
		if c.Started.Year() < 2000 {
			c.Started = time.Time{}
		}
		if c.Finished.Year() < 2000 || c.Running {
			c.Finished = time.Time{}
		}
	}
	if ins.NetworkSettings != nil {
		for port, bs := range ins.NetworkSettings.Ports {
			for _, b := range bs {
				hp, err := strconv.Atoi(b.HostPort)
				if err == nil && (b.HostIP == "127.0.0.1" || b.HostIP == "") {
					c.Ports[port.Int()] = hp
					break
				}
			}
		}
	}
	return c
}

// List returns every labpool container, running or not.
func (r *Runtime) List(ctx context.Context) ([]Container, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))
	if r.cfg.Node != "" {
		f.Add("label", LabelNode+"="+r.cfg.Node)
	}
	sums, err := r.api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, explain(err, "")
	}
	out := make([]Container, 0, len(sums))
	for _, s := range sums {
		if s.Labels[LabelManaged] != "true" {
			continue
		}
		c, err := r.inspect(ctx, s.ID)
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, c)
	}
	return out, nil
}

// Events streams state changes of labpool containers until ctx ends; the
// error channel reports a broken stream (for example a dockerd restart).
func (r *Runtime) Events(ctx context.Context) (<-chan Event, <-chan error) {
	f := filters.NewArgs(filters.Arg("type", "container"), filters.Arg("label", LabelManaged+"=true"))
	msgs, errs := r.api.Events(ctx, events.ListOptions{Filters: f})
	out := make(chan Event, 64)
	outErr := make(chan error, 1)
	go func() {
		defer close(out)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					return
				}
				ev := Event{ID: m.Actor.ID, Action: string(m.Action), Labels: m.Actor.Attributes, Time: time.Unix(0, m.TimeNano)}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case err := <-errs:
				if err != nil && ctx.Err() == nil {
					outErr <- explain(err, "")
				}
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, outErr
}
