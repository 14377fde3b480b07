package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// NodeClient implements app.NodeCaller: a client pinned to node id, over
// the pool's transport; this machine is reached through its own endpoint.
func (d *Daemon) NodeClient(ctx context.Context, id string) (*http.Client, error) {
	return d.nodeClient(id, d.ep.Client)
}

// NodeDataClient is NodeClient for bulk bytes: it rides the TCP data path
// (see transport.Endpoint.DataClient), so copies neither crawl through
// QUIC nor hold up control and telemetry.
func (d *Daemon) NodeDataClient(id string) (*http.Client, error) {
	return d.nodeClient(id, d.ep.DataClient)
}

func (d *Daemon) nodeClient(id string, client func(peer.ID, []string) *http.Client) (*http.Client, error) {
	pid, err := peer.ParseID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	if pid == d.id.ID {
		return client(pid, []string{d.selfAddr()}), nil
	}
	addrs := d.peers.Addrs(id)
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

// jobStore keeps this node's job records in its replicated log, so every
// member sees them, and their environments in its local settings, which
// never leave this machine (the manager saves public records only).
type jobStore struct {
	db     *store.DB
	origin string
}

// settingJobEnv prefixes the local setting holding a job's environment.
const settingJobEnv = "job-env:"

// SaveEnv implements jobs.Store: local settings only.
func (s jobStore) SaveEnv(id string, env []string) error {
	v := ""
	if env != nil {
		b, err := json.Marshal(env)
		if err != nil {
			return err
		}
		v = string(b)
	}
	return s.db.SetSetting(context.Background(), settingJobEnv+id, v)
}

// LoadEnv implements jobs.Store.
func (s jobStore) LoadEnv(id string) ([]string, error) {
	v, ok, err := s.db.Setting(context.Background(), settingJobEnv+id)
	if err != nil || !ok || v == "" {
		return nil, err
	}
	var env []string
	if err := json.Unmarshal([]byte(v), &env); err != nil {
		return nil, fmt.Errorf("read the environment of job %s: %w", id, err)
	}
	return env, nil
}

// SaveJob implements jobs.Store.
func (s jobStore) SaveJob(j jobs.Job) error {
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	_, err = s.db.Append(context.Background(), s.origin, app.KindJob, j.ID, j.Created, data)
	return err
}

// LoadJobs implements jobs.Store.
func (s jobStore) LoadJobs() ([]jobs.Job, error) {
	recs, err := s.db.Range(context.Background(), s.origin, app.KindJob, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	out := make([]jobs.Job, 0, len(recs))
	for _, r := range recs {
		var j jobs.Job
		if err := json.Unmarshal(r.Data, &j); err != nil || j.ID == "" {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

// openJobs connects to this machine's Docker engine (DOCKER_HOST or the
// default socket) and sets up the job manager; without an engine the node
// still serves telemetry and says why it cannot run containers.
func (d *Daemon) openJobs(ctx context.Context) {
	cfg := containers.DefaultConfig()
	cfg.Node = d.id.ID.String()
	var rt jobs.Runtime // stays a nil interface without an engine
	d.rt, d.rtErr = containers.Open(ctx, cfg)
	if d.rtErr != nil {
		d.log.Info("no container engine: this machine will not run jobs", "err", d.rtErr)
	} else {
		rt = d.rt
	}
	jcfg := jobs.DefaultConfig()
	jcfg.Node = d.id.ID.String()
	jcfg.SimulatedGPUs = d.cfg.SimulateGPUs > 0 || d.cfg.GPUsByEnv
	d.jobs = jobs.NewManager(jcfg, rt, telemetryGPUs{d.telem}, d.folders, jobStore{d.db, d.id.ID.String()}, d.log)
	d.openHealth(ctx)
	if p, err := d.loadPolicy(ctx); err != nil {
		d.log.Error("read this machine's policy: keeping the defaults", "err", err)
	} else if err := d.jobs.SetPolicy(p); err != nil {
		d.log.Error("this machine's stored policy is refused: keeping the defaults", "err", err)
	}
}

// settingPolicy is the local setting holding this machine's policy.
const settingPolicy = "policy"

// policyMu serializes policy changes (read, apply, store), of every daemon
// in this process: they are rare.
var policyMu sync.Mutex

// loadPolicy reads the machine's policy over the defaults.
func (d *Daemon) loadPolicy(ctx context.Context) (jobs.Policy, error) {
	p := jobs.DefaultPolicy()
	v, ok, err := d.db.Setting(ctx, settingPolicy)
	if err != nil || !ok {
		return p, err
	}
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return jobs.DefaultPolicy(), fmt.Errorf("decode policy: %w", err)
	}
	return p, nil
}

// Policy implements app.PolicyManager.
func (d *Daemon) Policy(ctx context.Context) (app.Policy, error) { return d.jobs.Policy(), nil }

// SetPolicy implements app.PolicyManager: the job manager checks the
// policy, the local settings keep it.
func (d *Daemon) SetPolicy(ctx context.Context, u app.PolicyUpdate) (app.Policy, error) {
	policyMu.Lock()
	defer policyMu.Unlock()
	p := u.Apply(d.jobs.Policy())
	if err := p.Check(); err != nil {
		return app.Policy{}, fmt.Errorf("%w: %v", app.ErrInvalid, err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return app.Policy{}, err
	}
	if err := d.db.SetSetting(ctx, settingPolicy, string(b)); err != nil {
		return app.Policy{}, err
	}
	return p, d.jobs.SetPolicy(p)
}

// jobCaller is who asks the jobs API: the device the transport proved,
// with its role in the pool ("" when it has none).
func (d *Daemon) jobCaller(r *http.Request) jobs.Caller {
	id, _ := transport.PeerID(r)
	role, _ := d.pool.Role(id)
	return jobs.Caller{ID: id.String(), Role: string(role)}
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
