// Package containers launches and watches this node's job containers
// through the Docker Engine API. It exposes typed operations only (never a
// Docker API proxy), hardens every container it creates, labels it as
// labpool's, and refuses to touch containers that do not carry its label.
//
// Run is the all-or-nothing launch: a container that fails to start is
// removed before the error returns. Streams (Logs, Events, LoadImage,
// PullImage) last as long as their ctx; every other call is also bounded
// by Config.Timeout.
package containers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/labpool/labpool/node/jobs"
)

// ErrNoDocker means the Docker engine cannot be reached.
var ErrNoDocker error = &statusError{"docker engine not reachable (is dockerd running, and may this user open its socket?)", http.StatusServiceUnavailable, "no_docker"}

// ErrNotManaged means a container is not labpool's: it is never touched.
var ErrNotManaged error = &statusError{"container is not managed by labpool", http.StatusForbidden, "not_managed"}

// dockerAPI is the part of the Docker client the runtime uses.
type dockerAPI interface {
	Ping(ctx context.Context) (types.Ping, error)
	ContainerCreate(ctx context.Context, config *container.Config, hostConfig *container.HostConfig, networkingConfig *network.NetworkingConfig, platform *ocispec.Platform, containerName string) (container.CreateResponse, error)
	ContainerStart(ctx context.Context, id string, options container.StartOptions) error
	ContainerStop(ctx context.Context, id string, options container.StopOptions) error
	ContainerPause(ctx context.Context, id string) error
	ContainerUnpause(ctx context.Context, id string) error
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
	ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageTag(ctx context.Context, source, target string) error
	ImageRemove(ctx context.Context, ref string, options image.RemoveOptions) ([]image.DeleteResponse, error)
	NetworkCreate(ctx context.Context, name string, options network.CreateOptions) (network.CreateResponse, error)
	NetworkInspect(ctx context.Context, networkID string, options network.InspectOptions) (network.Inspect, error)
	NetworkList(ctx context.Context, options network.ListOptions) ([]network.Summary, error)
	NetworkRemove(ctx context.Context, networkID string) error
	Info(ctx context.Context) (system.Info, error)
	Close() error
}

var _ dockerAPI = (*client.Client)(nil)

// Config tunes the runtime.
type Config struct {
	// Host is the engine's address, e.g. "unix:///run/docker.sock"; ""
	// means DOCKER_HOST or Docker's default.
	Host string
	// PidsLimit caps the processes of one container (0 = 4096).
	PidsLimit int64
	// MaxRestarts bounds restarts under the on-failure policy.
	MaxRestarts int
	// Timeout bounds each request that is not a stream (create, start,
	// inspect, list, stats, ...); 0 means only ctx bounds them. Stop adds
	// its grace period to it.
	Timeout time.Duration
	// Node, when set, is this node's device ID: Create labels containers
	// with it and List returns only containers labelled with it, so agents
	// sharing an engine never adopt each other's containers.
	Node string
	// JobUser is the host "uid:gid" a container runs as when its Launch
	// names no user and the engine does not remap users ("" = 65534:65534,
	// nobody).
	JobUser string
	// GuardPorts are this host's ports that no job reaches, whatever the
	// machine's job-network policy: labpool's QUIC (UDP) and TCP port and
	// the agent's metrics port (nil = DefaultGuardPorts).
	GuardPorts []int
	// ImageBook is the file that records who loaded each image through
	// the agent (Image.LoadedBy); "" keeps the record in memory only.
	ImageBook string
	// GuardEvery is how often, while Events streams, the host guard's
	// jumps are checked to still come first in INPUT and FORWARD, and put
	// back if not (30 s; a check that finds them first changes nothing).
	GuardEvery time.Duration
	// Log receives what no caller is there to be told: a host guard that
	// cannot be put first again (ERROR), a record of image loaders that
	// cannot be read or saved. nil: slog.Default().
	Log *slog.Logger
}

// DefaultJobUser is the unprivileged host user jobs run as: nobody.
const DefaultJobUser = jobs.DefaultJobUser

// DefaultConfig returns the settings the agent uses.
func DefaultConfig() Config {
	return Config{PidsLimit: 4096, MaxRestarts: 5, Timeout: 30 * time.Second, JobUser: DefaultJobUser, GuardEvery: 30 * time.Second}
}

// Runtime runs labpool's containers on one Docker engine. It is safe for
// concurrent use.
type Runtime struct {
	cfg Config
	api dockerAPI
	log *slog.Logger

	// remap says whether the engine maps container users to unprivileged
	// host users (dockerd --userns-remap); read once at Open.
	remap bool

	// imageMu is held by each load and pull, so that guardTags sees the
	// tags that one changed and no other's.
	imageMu sync.Mutex

	// book records who loaded each image (set under imageMu).
	book *book

	// netMu orders the creation of containers on job networks and the
	// removal of networks no container is on.
	netMu sync.Mutex

	firewalls []firewall  // the tools the host guard is installed with
	guardOnce sync.Once   // installs the host guard, at the first launch
	guardErr  error       // what guardOnce met
	guardUp   atomic.Bool // the guard is installed: keepGuardFirst checks it
	guardMu   sync.Mutex  // orders keepGuardFirst's checks, which read firewalls under it
	guardBad  atomic.Bool // the last check of guardCheck failed (logged once)

	mu  sync.Mutex           // guards cpu
	cpu map[string]cpuSample // last CPU reading per container, for Stats
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
	wait := cfg.Timeout
	if wait <= 0 {
		wait = 10 * time.Second // never hang on a socket that does not answer
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := c.Ping(pctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w at %s: %v", ErrNoDocker, c.DaemonHost(), err)
	}
	c.NegotiateAPIVersion(pctx)
	info, err := c.Info(pctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("read the docker engine's settings: %w", err)
	}
	r.remap = remapsUsers(info)
	return r, nil
}

// remapsUsers says whether the engine runs with userns-remap: its security
// options then list "name=userns".
func remapsUsers(info system.Info) bool {
	for _, o := range info.SecurityOptions {
		for _, kv := range strings.Split(o, ",") {
			if kv == "name=userns" {
				return true
			}
		}
	}
	return false
}

// RemapsUsers says whether the engine maps container users to unprivileged
// host users: root in a container is then no host root.
func (r *Runtime) RemapsUsers() bool { return r.remap }

func newRuntime(cfg Config, api dockerAPI) *Runtime {
	if cfg.PidsLimit <= 0 {
		cfg.PidsLimit = DefaultConfig().PidsLimit
	}
	if cfg.JobUser == "" {
		cfg.JobUser = DefaultJobUser
	}
	if cfg.GuardPorts == nil {
		cfg.GuardPorts = DefaultGuardPorts
	}
	if cfg.GuardEvery <= 0 {
		cfg.GuardEvery = DefaultConfig().GuardEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	b, err := openBook(cfg.ImageBook)
	if err != nil {
		cfg.Log.Warn("the record of who loaded each image is lost: images loaded before have no known loader", "err", err)
	}
	return &Runtime{cfg: cfg, api: api, log: cfg.Log, cpu: map[string]cpuSample{}, book: b, firewalls: defaultFirewalls()}
}

// Close releases the client.
func (r *Runtime) Close() error { return r.api.Close() }

// Ping checks that the engine answers.
func (r *Runtime) Ping(ctx context.Context) error {
	ctx, cancel := r.bounded(ctx)
	defer cancel()
	if _, err := r.api.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	return nil
}

// bounded applies Config.Timeout to one request.
func (r *Runtime) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return r.boundedPlus(ctx, 0)
}

func (r *Runtime) boundedPlus(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if r.cfg.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.cfg.Timeout+extra)
}
