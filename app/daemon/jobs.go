package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// NodeClient implements app.NodeCaller: a client pinned to node id, over
// the pool's transport; this machine is reached through its own endpoint.
func (d *Daemon) NodeClient(ctx context.Context, id string) (*http.Client, error) {
	return d.nodeClient(ctx, id, d.ep.Client)
}

// NodeDataClient is NodeClient for bulk bytes: it rides the TCP data path
// (see transport.Endpoint.DataClient), so copies neither crawl through
// QUIC nor hold up control and telemetry.
func (d *Daemon) NodeDataClient(id string) (*http.Client, error) {
	return d.nodeClient(context.Background(), id, d.ep.DataClient)
}

// addrWait bounds how long a call waits to learn where a member is (right
// after a join, the member it joined through is hinted at once; the others
// are learnt from its stream within a second or so).
const addrWait = 5 * time.Second

func (d *Daemon) nodeClient(ctx context.Context, id string, client func(peer.ID, []string) *http.Client) (*http.Client, error) {
	pid, err := peer.ParseID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	if pid == d.id.ID {
		return client(pid, []string{d.selfAddr()}), nil
	}
	wctx, cancel := context.WithTimeout(ctx, addrWait)
	defer cancel()
	addrs := d.peers.WaitAddrs(wctx, id)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no address known for %s: is it on the network?", pid.Short())
	}
	return client(pid, addrs), nil
}

// selfAddr is where this daemon reaches its own endpoint.
func (d *Daemon) selfAddr() string {
	a := d.ep.Addr()
	ip := a.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(a.Port))
}

// openJobs sets up the job manager over this machine's executor: its
// Docker engine (DOCKER_HOST or the default socket), or the Slurm cluster
// it stands for (Config.Slurm). Without either the node still serves
// telemetry and says why it cannot run jobs.
func (d *Daemon) openJobs(ctx context.Context) {
	ex := d.openExecutor(ctx)
	jcfg := jobs.DefaultConfig()
	jcfg.Node = d.id.ID.String()
	jcfg.MemberName = d.memberName
	jcfg.Devices = d.telem.Info().GPUs
	jcfg.GrantEdge = d.gpus.ReadEnergy // nil Sampler without a driver: a no-op
	// Where the executor schedules (a cluster's agent), the idle reclaim
	// policy judges its Slurm jobs by their compute nodes' samples,
	// and stats shows their GPUs as those nodes report them.
	slurmGPUs := app.NewSlurmIdle(d.db, d.slurmProof())
	jcfg.RemoteIdle = slurmGPUs.Idle
	jcfg.RemoteGPUs = slurmGPUs.GPUs
	var store jobs.Store = nodestore.NewJobs(d.db, d.id.ID.String())
	if d.cluster != nil {
		store = d.cluster.watchJobs(store)
	}
	d.poolQueue(&jcfg)
	d.jobs = jobs.NewManager(jcfg, ex, telemetryGPUs{d.telem}, d.folders, store, d.log)
	d.openHealth(ctx)
	d.policy = nodestore.NewPolicy(d.db, d.jobs)
	if p, err := d.policy.Load(ctx); err != nil {
		d.log.Error("read this machine's policy: keeping the defaults", "err", err)
	} else if err := d.jobs.SetPolicy(p); err != nil {
		d.log.Error("this machine's stored policy is refused: keeping the defaults", "err", err)
	}
}

// openExecutor picks what runs this machine's jobs: with --slurm, the
// cluster; otherwise its Docker engine, and where none is reachable, the
// cluster that answers here unless --slurm=false. nil: nothing (d.rtErr
// says why).
func (d *Daemon) openExecutor(ctx context.Context) jobs.Executor {
	if d.cfg.Slurm == SlurmOn {
		return d.openSlurm(ctx)
	}
	cfg := containers.DefaultConfig()
	cfg.Node = d.id.ID.String()
	cfg.GuardPorts = d.guardPorts()
	cfg.ImageBook = filepath.Join(d.cfg.DataDir, "image-loaders.json")
	cfg.Log = d.log
	d.rt, d.rtErr = containers.Open(ctx, cfg)
	if d.rtErr == nil {
		return containers.NewExecutor(d.rt, containers.ExecutorConfig{SimulatedGPUs: d.cfg.SimulateGPUs > 0 || d.cfg.GPUsByEnv})
	}
	if d.cfg.Slurm == SlurmAuto {
		if err := slurm.Detect(ctx, &slurm.CmdRunner{Timeout: probeSlurm}); err == nil {
			d.log.Info("no container engine, and a Slurm controller answers: standing for its cluster", "docker", d.rtErr)
			return d.openSlurm(ctx)
		}
	}
	if errors.Is(d.rtErr, containers.ErrNoDocker) {
		d.log.Debug("docker engine", "err", d.rtErr) // the client's own words, for whoever digs
		d.rtErr = noEngineError{d.rtErr}
	}
	d.log.Info("this machine runs no jobs, and launches on the pool's other machines, copies and opens tunnels as any member: " + d.rtErr.Error())
	return nil
}

// noEngineError says in one sentence, shown to the pool as well, that no
// Docker engine answers here and what to do; errors.Is still finds
// containers.ErrNoDocker in it.
type noEngineError struct{ err error }

func (e noEngineError) Error() string {
	return "no Docker engine answers here (start Docker, or let this user open its socket, to run jobs here)"
}

func (e noEngineError) Unwrap() error { return e.err }

// guardPorts are this machine's ports that no job may reach: labpool's
// default port, the one it listens on (QUIC over UDP; TCP for the data
// path), and the metrics port.
func (d *Daemon) guardPorts() []int {
	ports := slices.Clone(containers.DefaultGuardPorts)
	for _, a := range []string{d.cfg.Listen, d.cfg.Metrics} {
		if _, p, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				ports = append(ports, n)
			}
		}
	}
	if a := d.ep.Addr(); a != nil && a.Port > 0 {
		ports = append(ports, a.Port)
	}
	return ports
}

// jobCaller is who asks the jobs API: the device the transport proved,
// with its role in the pool ("" when it has none).
func (d *Daemon) jobCaller(r *http.Request) jobs.Caller {
	id, _ := transport.PeerID(r)
	role, _ := d.pool.Role(id)
	return jobs.Caller{ID: id.String(), Role: string(role)}
}

// devicesChanged gives the job manager's ledger the GPUs read again while
// the agent runs (one appeared or was lost, MIG changed): placement weighs
// the new topology, and MIG instances are granted by their new UUIDs.
// Telemetry runs after openJobs, so d.jobs is set.
func (d *Daemon) devicesChanged(devs []gpu.Info) {
	if d.jobs != nil {
		d.jobs.Ledger().SetTopology(devs)
	}
}

// telemetryGPUs gives the job manager the latest GPU sample.
type telemetryGPUs struct{ t *agent.Telemetry }

// GPUs implements jobs.GPUState.
func (g telemetryGPUs) GPUs() []gpu.Stats {
	s, ok := g.t.Latest()
	if !ok {
		return nil
	}
	return s.GPUs
}
