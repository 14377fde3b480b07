// Package daemon runs one machine's labpool: it wires the identity, the
// QUIC endpoint, discovery, the replica and its followers, the telemetry of
// this node, and the local API on a unix socket. There is one daemon per
// data directory: `labpool agent`, or the window and `labpool web` when no
// agent runs.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/alerting"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/app/sharing"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/discovery"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
	"golang.org/x/sync/errgroup"
)

// Config is one daemon's settings.
type Config struct {
	DataDir string
	Listen  string   // UDP address for QUIC, e.g. ":7420"
	Name    string   // this machine's name; "" keeps the last one, or the host name
	Ifaces  []string // mDNS interfaces; empty = all
	Version string
	// SampleInterval is the telemetry period.
	SampleInterval time.Duration
	// ViewInterval is how often the pool view is pushed to UIs.
	ViewInterval time.Duration
	// SimulateGPUs, when above 0, replaces NVML with that many simulated
	// GPUs (named as such): for demos and tests on machines without one.
	SimulateGPUs int
	// GPUsByEnv grants GPUs to containers through NVIDIA_VISIBLE_DEVICES
	// alone, with no device request (LABPOOL_GPU_REQUEST=env): for engines
	// whose default runtime is NVIDIA's, and for tests on the mock NVML.
	GPUsByEnv bool
	// QUICOnly serves no TCP data path (LABPOOL_DATA_PATH=quic): copies
	// from here ride QUIC.
	QUICOnly bool
	// Metrics, when set, serves Prometheus metrics of this machine's GPUs
	// at http://Metrics/metrics (HOST:PORT, loopback unless
	// MetricsAllowRemote: they carry job and owner labels).
	// MetricsHosts: further names a request may call it by (metrics.Config.Hosts).
	Metrics            string
	MetricsAllowRemote bool
	MetricsHosts       []string
	// Slurm says whether this machine stands for a Slurm cluster (SlurmOff:
	// never; the window and labpool web run with it off). SlurmDir holds
	// the agent's records of its jobs ("": DataDir/slurm). SlurmJobUser is
	// the Unix account members' jobs run as unless the policy maps them
	// to their own (slurm.Config.JobUser).
	Slurm        SlurmMode
	SlurmDir     string
	SlurmJobUser string
	// SystemSocket, when set, also serves the local API there to root, the
	// agent's user and the members of AdminGroup (web.ListenSystem,
	// web.RequireAdmin): the system agent of the labpool package, whose
	// socket is web.SystemSocket.
	SystemSocket string
	AdminGroup   string
	// AttachSocket, when set, is the socket of the agent already serving
	// this machine (the system agent's) that RunWeb serves the UI for,
	// rather than DataDir's.
	AttachSocket string
}

// DefaultConfig returns the settings of `labpool agent`.
func DefaultConfig() Config {
	return Config{Listen: ":7420", SampleInterval: time.Second, ViewInterval: 500 * time.Millisecond, Version: "dev"}
}

// Daemon is a running labpool node.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	id    *peer.Identity
	name  string
	lock  *os.File
	db    *store.DB
	ep    *transport.Endpoint
	peers *replica.Peers
	pool  *pool.Manager
	svc   *app.Service
	telem *agent.Telemetry
	gpus  *gpu.Sampler // nil without a driver
	ann   *discovery.Announcer
	disc  discovery.Config

	tunnels *app.Tunnels
	jobs    *jobs.Manager
	book    *reserve.Book    // this machine's reservations (reserve.go)
	policy  nodestore.Policy // this machine's policy, applied by jobs
	folders *folders.Registry
	shares  *sharing.Publisher // this machine's shares and their records
	copies  *copies.Receiver
	rt      *containers.Runtime // nil without a reachable Docker engine
	alerts  *alerting.Alerting  // this machine's alert rules, evaluator and webhook
	slurm   *slurmProcs         // the Slurm jobs on this machine's GPUs (slurmprocs.go)
	rtErr   error
	cluster *clusterCard // the card of the Slurm cluster this agent stands for; nil: none

	mu         sync.Mutex // guards candidates
	candidates map[string]discovery.Candidate

	evictions evictionQueue // devices removed from the pool, whose work here ends
}

// Socket is the path of the local API's unix socket in dataDir.
func Socket(dataDir string) string { return filepath.Join(dataDir, "labpool.sock") }

// Run starts a daemon and serves until ctx is cancelled. ready, if not nil,
// is called once the local API answers.
func Run(ctx context.Context, cfg Config, log *slog.Logger, ready func(*Daemon)) error {
	d, err := open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.close()
	return d.run(ctx, ready, nil)
}

func open(ctx context.Context, cfg Config, log *slog.Logger) (_ *Daemon, err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	secureDataDir(cfg.DataDir, log)
	d := &Daemon{cfg: cfg, log: log, candidates: map[string]discovery.Candidate{}}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.lock, err = lockDir(cfg.DataDir); err != nil {
		return nil, err
	}
	if d.id, err = peer.LoadOrCreate(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("load identity: %w", err)
	}
	if d.db, err = store.Open(filepath.Join(cfg.DataDir, "replica.db")); err != nil {
		return nil, err
	}
	if d.name, err = d.pickName(ctx); err != nil {
		return nil, err
	}
	tcfg := transport.DefaultConfig()
	tcfg.Listen = cfg.Listen
	tcfg.QUICOnly = cfg.QUICOnly
	// Keepalives every second, not 0.4 s: the replica streams carry a frame
	// at least every second (records or a heartbeat) and notice a silent
	// peer themselves (replica.Config.Silence); pings between them were the
	// agent's largest cost per member. A ping is due a keepalive after the
	// last packet received: at 1.5 s, never while the frames and their
	// acknowledgements arrive every second on the beat (at 1 s it raced
	// them). The idle timeout leaves room for a lost ping's retransmission
	// on an otherwise quiet connection (quic-go pings at most every half of it).
	tcfg.KeepAlive, tcfg.IdleTimeout = 1500*time.Millisecond, 3*time.Second
	tcfg.Member = d.isMember // the others pass through the door (transport/door.go)
	// At the door only the join exchange, and the replica's stream, where a
	// removed device reads that it was removed (tellRemoved); the door
	// answers every other path 403 itself.
	tcfg.Door.Paths = []string{pool.JoinPath, replica.StreamPath}
	if d.ep, err = transport.New(d.id, tcfg, log); err != nil {
		return nil, fmt.Errorf("listen for peers on %s: %w", cfg.Listen, err)
	}
	d.openTelemetry(ctx)
	d.openSlurmProcs(ctx)
	fcfg := folders.DefaultConfig()
	fcfg.Self, fcfg.DataDir = d.id.ID.String(), cfg.DataDir
	if d.folders, err = folders.OpenWith(fcfg, nodestore.NewShares(d.db)); err != nil {
		return nil, err
	}
	d.openCopies()
	d.peers = replica.NewPeers(replica.DefaultConfig(), d.db, d.id.ID, d.ep, log)
	if err := d.openPool(ctx); err != nil {
		return nil, err
	}
	d.peers.OnPool = d.pool.Receive
	d.peers.Published = publishedAddrs
	d.openJobs(ctx)
	d.openReservations()
	d.shares = sharing.New(sharing.Config{Self: d.id.ID, Name: d.name}, d.db, d.folders, d.pool, log)
	in := alerting.NewInputs(d.id.ID.String(), d.db, func() map[string]string { return d.jobs.Ledger().Granted() }, d.folders, d.pool, d.peers)
	in.SetJobs(d.jobOf) // its own jobs, and the Slurm jobs on its GPUs
	d.alerts = alerting.Open(ctx, alerting.Config{Self: d.id.ID, Name: d.name, Nodes: members{d},
		WebhookPolicy: d.webhookPolicy, Live: d.peers}, d.db, d.pool, in, log)
	d.svc, err = app.New(app.Deps{DB: d.db, Self: d.self(), Live: d.peers, Pool: (*poolManager)(d),
		Nodes: d, Folders: d.shares, Copier: copier{d.copies}, Policy: d.policy, Signer: signer{d.id}, Log: log})
	if err != nil {
		return nil, err
	}
	d.tunnels = d.svc.Tunnels()
	return d, nil
}

// pickName chooses this machine's name: the flag, the last one, the host name.
func (d *Daemon) pickName(ctx context.Context) (string, error) {
	name := d.cfg.Name
	if name == "" {
		last, _, err := d.db.Setting(ctx, app.SettingSelfName)
		if err != nil {
			return "", err
		}
		name = last
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	if name == "" {
		name = "labpool-" + d.id.ID.Short()
	}
	if err := d.db.SetSetting(ctx, app.SettingSelfName, name); err != nil {
		return "", err
	}
	return name, d.db.SetSetting(ctx, app.SettingSelfID, d.id.ID.String())
}

func (d *Daemon) openTelemetry(ctx context.Context) {
	var gpus agent.GPUSource
	g, err := gpu.Open(gpu.DefaultConfig())
	if d.cfg.SimulateGPUs > 0 {
		d.log.Warn("simulating GPUs instead of reading NVML", "gpus", d.cfg.SimulateGPUs)
		g, err = gpu.OpenSimulated(d.cfg.SimulateGPUs, d.id.ID.String(), gpu.DefaultConfig())
	}
	switch {
	case err == nil:
		d.gpus, gpus = g, g
	case errors.Is(err, gpu.ErrNoDriver):
		d.log.Info("monitoring the host only", "gpus", err.Error())
	default:
		d.log.Warn("open nvml", "err", err)
	}
	acfg := agent.DefaultConfig()
	acfg.Interval = d.cfg.SampleInterval
	acfg.ID, acfg.Name, acfg.Version = d.id.ID.String(), d.name, d.cfg.Version
	acfg.Annotate = d.annotateGPUs // quarantines, jobs and processes (gpuhealth.go)
	acfg.DevicesChanged = d.devicesChanged
	d.telem = agent.New(acfg, gpus, host.NewSampler(host.DefaultConfig()), d.log)
}

func (d *Daemon) self() app.Self {
	return app.Self{
		ID: d.id.ID.String(), ShortID: d.id.ID.Short(), Name: d.name, Version: d.cfg.Version,
		APIVersion: app.APIVersion, DataDir: d.cfg.DataDir, Listen: d.ep.Addr().String(),
	}
}

// Service returns the daemon's service layer.
func (d *Daemon) Service() *app.Service { return d.svc }

func (d *Daemon) close() {
	if d.ep != nil {
		d.ep.Close()
	}
	if d.gpus != nil {
		d.gpus.Close()
	}
	if d.rt != nil {
		d.rt.Close()
	}
	if d.db != nil {
		d.db.Close()
	}
	if d.lock != nil {
		d.lock.Close()
	}
}

// run serves everything until ctx is cancelled; extra runs beside them.
func (d *Daemon) run(ctx context.Context, ready func(*Daemon), extra func(context.Context) error) error {
	sock, err := listenSocket(d.cfg.DataDir)
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	api := &http.Server{Handler: web.Handler(d.svc, nil, d.log), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	g.Go(func() error { return serveUntil(ctx, api, sock) })
	if d.cfg.SystemSocket != "" {
		sys, err := d.systemServer(ctx)
		if err != nil {
			sock.Close()
			return err
		}
		g.Go(func() error { return serveUntil(ctx, sys.srv, sys.l) })
	}
	g.Go(func() error { return d.telem.Run(ctx) })
	samples, cancel := d.telem.Subscribe()
	defer cancel()
	g.Go(func() error { return history.NewRecorder(d.db, d.id.ID.String(), d.log).Run(ctx, samples) })
	energy, cancelEnergy := d.telem.Subscribe()
	defer cancelEnergy()
	g.Go(func() error { return app.NewEnergyRecorder(d.db, d.id.ID.String(), d.log).Run(ctx, energy) })
	alertSamples, cancelAlerts := d.telem.Subscribe()
	defer cancelAlerts()
	g.Go(func() error { return d.alerts.Run(ctx, alertSamples) })
	g.Go(func() error { return d.jobs.RunReclaim(ctx) })
	g.Go(func() error { return d.svc.RunAlertEvents(ctx) })
	g.Go(func() error { return d.ep.Serve(ctx, d.peerHandler()) })
	g.Go(func() error { return d.peers.Run(ctx) })
	g.Go(func() error { return d.svc.Run(ctx, d.cfg.ViewInterval) })
	g.Go(func() error { return d.runNodeRecord(ctx) })
	if d.jobs != nil {
		g.Go(func() error { return app.NewGrantsPublisher(d.db, d.id.ID.String(), d.allocation, d.log).Run(ctx) })
	}
	if d.cluster != nil {
		g.Go(func() error { return d.cluster.run(ctx) })
	}
	g.Go(func() error { return d.tunnels.Run(ctx) })
	g.Go(func() error { return d.jobs.Run(ctx) })
	g.Go(func() error { return d.shares.Run(ctx) })
	g.Go(func() error { return d.copies.Run(ctx) })
	g.Go(func() error { return d.runEvictions(ctx) })
	if d.cfg.Metrics != "" {
		g.Go(func() error { return d.runMetrics(ctx) })
	}
	if err := d.startDiscovery(ctx, g); err != nil {
		return err
	}
	if extra != nil {
		g.Go(func() error { return extra(ctx) })
	}
	d.hintKnownAddresses(ctx)
	d.log.Info("labpool daemon running", "id", d.id.ID, "name", d.name, "listen", d.ep.Addr().String(), "data", d.cfg.DataDir)
	if ready != nil {
		ready(d)
	}
	return g.Wait()
}

// peerHandler is what members (and, for joining only, strangers) reach.
func (d *Daemon) peerHandler() http.Handler {
	rs := replica.NewServer(d.db, d.id.ID.String(), d.log)
	rs.Pool = d.pool.Records
	rs.Addrs = d.peers.Relay
	rs.Skip = history.SkipOnCatchUp
	return agent.PeerHandler(agent.Parts{
		Telemetry: d.telem,
		Stream:    agent.Route{Method: http.MethodGet, Path: replica.StreamPath, Handler: d.heard(d.hintFollower(rs))},
		Join:      agent.Route{Method: http.MethodPost, Path: pool.JoinPath, Handler: transport.RateLimited(d.ep.Refusals(), d.pool.JoinHandler())},
		Jobs:      jobs.Handler(d.jobs, d.jobCaller),
		Images:    containers.ImageHandler(d.rt, d.jobs, d.jobCaller),
		Folders:   d.folderHandler(),
		Transfers: d.copies.Handler(d.folderCaller),
		Alerts:    alerts.Handler(d.alerts.Machine(), d.alerts.Caller),
		Reserve:   reserve.Handler(d.book, d.reserveCaller),
		Authorize: func(open []string, h http.Handler) http.Handler {
			return d.tellRemoved(transport.AuthorizeLimited(d.ep.Refusals(), d.isMember, open, h))
		},
	})
}

// heard tells the followers that the member opening a replication stream
// reaches this machine: the follower of it, if offline, dials at once.
func (d *Daemon) heard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := transport.PeerID(r); ok {
			d.peers.Heard(id.String())
		}
		h.ServeHTTP(w, r)
	})
}

func listenSocket(dir string) (net.Listener, error) {
	path := Socket(dir)
	os.Remove(path) // stale: we hold the directory's lock
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	if err := restrictToOwner(path, false); err != nil {
		l.Close() // never serve a socket other users may open
		return nil, err
	}
	return l, nil
}

// serveUntil serves srv on l until ctx is cancelled.
func serveUntil(ctx context.Context, srv *http.Server, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
		<-errc
		return nil
	}
}
