// Package daemon runs one machine's labpool. There is one daemon per data
// directory: `labpool agent`, or the window and `labpool web` when no agent
// runs.
//
// The daemon is a plain list of parts, in open: the data directory's lock,
// the identity and the replica's store, the QUIC endpoint, the replica's
// followers, discovery, the pool, the GPUs, the shared folders and their
// publisher, the copies, the executor (Docker or a Slurm cluster, with the
// cluster's card), the job manager with the pool-wide queue, the Slurm
// view of a compute node, the telemetry and what reads its samples, the
// node record, the grants record, the reservations' book, the alerts, the
// service, the lender, the evictions of removed devices, the metrics and
// the peer API.
// Each part is a small type with a constructor that takes the parts it
// needs, and a Run (until ctx ends) or a Close or both, in the package that
// owns its concept (discovery.Presence, membership.Evictions,
// app.SlurmWatch, app.NodePublisher, app.NewPoolQueue, app.OpenLend,
// app.OpenReservations, alerting.OpenMachine, slurm.Card,
// agent.OpenExecutor...) or, where it only maps this package's Config onto
// its owner's, in a file of its own here; run
// runs them all under one errgroup and close closes them in reverse. A
// part that is absent on this machine (metrics without --metrics, the card
// without a cluster, the GPUs without a driver) is absent from the list;
// no part checks for another. Where two parts need each other the list
// names the cycle with a late-bound holder (late) and binds it once the
// later part is built.
//
// Adding a part: write its file (the type, its constructor taking what it
// needs, Run and/or Close) in the package that owns it, then add one line
// to open, below the parts it needs: d.add(thing.New(db, jm.m, log)).
//
// No work in the telemetry's tick (its Annotate hook) writes to the
// replica: a part queues what it observed there and writes it in its own
// Run.
package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/alerting"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/app/membership"
	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/app/sharing"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
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

// Daemon is a running labpool node: its parts, in the order open built
// them, and the few of them that run and the tests reach.
type Daemon struct {
	cfg   Config
	log   *slog.Logger
	parts []part

	id      *peer.Identity
	name    string
	ep      *transport.Endpoint
	members *membership.Membership // the pool, as the local API and the peer API see it
	svc     *app.Service
	peerAPI http.Handler // what members (and, for joining only, strangers) reach
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

// open builds the daemon's parts in the order they depend on each other:
// each from the parts above it, and the list is this function. run runs
// every part that runs; close closes them in reverse. Adding a part is its
// own file (its type, its constructor taking what it needs, its Run or
// Close) and one line here, below the parts it needs.
func open(ctx context.Context, cfg Config, log *slog.Logger) (_ *Daemon, err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	secureDataDir(cfg.DataDir, log)
	d := &Daemon{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	// The list's real cycles, each bound below once its part is built.
	var (
		roles    late[*pool.Manager]    // the transport admits members; the pool, built on it, says who is one
		removed  removedLate            // the pool removes devices whose copies and jobs here end
		jobsLate late[*jobs.Manager]    // the executor and the cluster's proof read the policy the manager applies
		sampled  late[*agent.Telemetry] // the jobs place by the latest sample; the telemetry asks them to annotate it
		service  late[*app.Service]     // the copies and the alerts call members through the service built on them
	)
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	d.add(lock)
	if d.id, err = peer.LoadOrCreate(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("load identity: %w", err)
	}
	self := d.id.ID.String()
	db, err := store.Open(filepath.Join(cfg.DataDir, "replica.db"))
	if err != nil {
		return nil, err
	}
	d.add(db)
	if d.name, err = pickName(ctx, db, cfg.Name, d.id.ID); err != nil {
		return nil, err
	}
	isMember := func(id peer.ID) bool { // before the pool is read, no one is
		pm, ok := roles.get()
		return ok && membership.RoleOf(d.id.ID, pm, id) != ""
	}
	if d.ep, err = openEndpoint(d.id, cfg, isMember, log); err != nil {
		return nil, err
	}
	d.add(d.ep)
	peers := newReplica(db, d.id.ID, d.ep, log)
	d.add(peers)
	nodes := app.NewNodeDialer(d.id.ID, d.ep, peers.Peers)
	disc := openDiscovery(cfg, d.id.ID, d.name, d.ep.Addr().Port, db, peers.Peers, log)
	d.add(disc)
	pm, err := openPool(ctx, d.id, d.name, db, d.ep, disc, peers.Peers, removed.call, log)
	if err != nil {
		return nil, err
	}
	roles.set(pm)
	peers.OnPool = pm.Receive
	d.members = membership.New(d.id.ID, pm, peers.Peers, d.ep)
	gpus := openGPUs(cfg, d.id.ID, log) // nil: no GPU driver
	if gpus != nil {
		d.add(gpus)
	}
	fcfg := folders.DefaultConfig()
	fcfg.Self, fcfg.DataDir = self, cfg.DataDir
	fcfg.JobUser = func() string { // a share's folder user, where root owns it: the jobs policy's job user
		if m, ok := jobsLate.get(); ok {
			return m.Policy().JobUser
		}
		return ""
	}
	fcfg.PersonOf = func(id string) string { return personOf(pm, id) } // a share's list names people
	fcfg.IsPerson = func(id string) bool { return isPerson(pm, id) }
	reg, err := folders.OpenWith(fcfg, nodestore.NewShares(db))
	if err != nil {
		return nil, err
	}
	shares := sharing.New(sharing.Config{Self: d.id.ID, Name: d.name}, db, reg, pm, log)
	d.add(shares)
	cps := openCopies(d.id, db, reg, nodes, serviceMembers{&service}, shares, log)
	d.add(cps)
	policy := func() jobs.Policy { // the defaults until the manager applies the stored one
		if m, ok := jobsLate.get(); ok {
			return m.Policy()
		}
		return jobs.Policy{}
	}
	ex := openExecutor(ctx, cfg, d.id.ID, d.ep.Addr().Port, policy, log)
	if ex.Runtime != nil { // a Docker engine: its client
		d.add(ex.Runtime)
	}
	if ex.Card != nil { // a cluster's agent: its card
		d.add(ex.Card)
	}
	if ex.MPS != nil { // GPU shares capped by MPS: the daemons' keeper
		d.add(ex.MPS)
	}
	jm := openJobs(ctx, cfg, self, db, ex, gpus, reg, telemetryGPUs{&sampled}, d.members.MemberName,
		app.NewSlurmProof(d.id.ID, d.ep.SessionIPs, ex.Card, policy), app.NewPoolQueue(self, db, pm, service.get, log), log)
	jobsLate.set(jm.m)
	d.add(jm)
	sp := app.NewSlurmWatch(ctx, app.ProcRoot, db, app.NewSlurmJobs(db), self, policy, log)
	d.add(sp)
	tel := openTelemetry(cfg, d.id.ID, d.name, gpus, jm.m, sp, log)
	sampled.set(tel)
	d.add(tel)
	d.add(tel.Sink(history.NewRecorder(db, self, log).Run))
	d.add(tel.Sink(app.NewEnergyRecorder(db, self, log).Run))
	d.add(app.NewNodePublisher(self, db, tel.Info, d.ep.Addr().Port, cfg.Ifaces, ex.Card, ex.Err, log))
	d.add(app.NewMachineGrants(db, self, jm.m, ex.Card, log))
	book := app.OpenReservations(self, db, jm.m, tel.Info, log)
	al := alerting.OpenMachine(ctx, d.id.ID, d.name, db, pm, peers.Peers, jm.m, sp, reg, serviceMembers{&service}, policy, log)
	d.add(tel.Sink(al.Run))
	if d.svc, err = app.New(app.Deps{DB: db, Self: d.self(), Live: peers, Pool: d.members, Nodes: nodes, Folders: shares,
		Copier: app.CopierOf(cps), Policy: nodestore.NewPolicy(db, jm.m), Signer: app.DeviceSigner{ID: d.id}, Log: log}); err != nil {
		return nil, err
	}
	service.set(d.svc)
	d.add(runFunc(d.svc.RunAlertEvents))
	d.add(serviceViews{d.svc, cfg.ViewInterval})
	d.add(d.svc.Tunnels())
	if ex.Runtime != nil { // a machine that runs containers lends them to the pool as its policy says
		d.add(app.OpenLend(ctx, self, db, jm.m, tel.Info, d.svc, log))
	}
	ev := membership.NewEvictions(d.members, d.ep, cps, jm.m, log)
	removed.set(ev)
	d.add(ev)
	if cfg.Metrics != "" {
		d.add(newMetrics(cfg, tel, jm.m, d.members.MemberName, func(id string) string { return personName(pm, id) }, log))
	}
	d.peerAPI = peerHandler(db, d.ep, pm, d.members, peers.Peers, tel, jm.m, ex, reg, shares, cps, al, book, log)
	d.add(peerServer{d.ep, d.peerAPI})
	return d, nil
}

func (d *Daemon) self() app.Self {
	return app.Self{
		ID: d.id.ID.String(), ShortID: d.id.ID.Short(), Name: d.name, Version: d.cfg.Version,
		APIVersion: app.APIVersion, DataDir: d.cfg.DataDir, Listen: d.ep.Addr().String(),
	}
}

// Service returns the daemon's service layer.
func (d *Daemon) Service() *app.Service { return d.svc }

// run runs every part, and serves the local API, until ctx is cancelled;
// extra runs beside them.
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
	for _, p := range d.parts {
		if r, ok := p.(runner); ok {
			g.Go(func() error { return r.Run(ctx) })
		}
	}
	if extra != nil {
		g.Go(func() error { return extra(ctx) })
	}
	d.log.Info("labpool daemon running", "id", d.id.ID, "name", d.name, "listen", d.ep.Addr().String(), "data", d.cfg.DataDir)
	if ready != nil {
		ready(d)
	}
	return g.Wait()
}

// pickName chooses this machine's name: the flag, the last one, the host name.
func pickName(ctx context.Context, db *store.DB, flag string, id peer.ID) (string, error) {
	name := flag
	if name == "" {
		last, _, err := db.Setting(ctx, app.SettingSelfName)
		if err != nil {
			return "", err
		}
		name = last
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	if name == "" {
		name = "labpool-" + id.Short()
	}
	if err := db.SetSetting(ctx, app.SettingSelfName, name); err != nil {
		return "", err
	}
	return name, db.SetSetting(ctx, app.SettingSelfID, id.String())
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
	if err := peer.RestrictToOwner(path, false); err != nil {
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
