package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/jobs"
)

// Tunnels forwards local TCP ports to container ports of jobs, one QUIC
// stream per TCP connection. A tunnel keeps its local port for as long as
// the job runs: a dropped network only fails the connections open at that
// moment, and the next ones reach the job again through a new session.
//
// Run owns every goroutine of every tunnel, and returns after they are gone.
type Tunnels struct {
	svc *Service
	log *slog.Logger

	serve chan *tunnel  // Open to Run: a new listener to serve
	done  chan struct{} // closed when Run returns

	mu   sync.Mutex // guards open
	open map[tunnelKey]*tunnel
}

type tunnelKey struct {
	job  string // JobRef: a job is its node's and its ID
	port int
}

type tunnel struct {
	Tunnel
	node string
	l    net.Listener
}

// newTunnels returns the tunnel set of svc; Run must be running for Open.
func newTunnels(svc *Service, log *slog.Logger) *Tunnels {
	return &Tunnels{svc: svc, log: log, open: map[tunnelKey]*tunnel{}, serve: make(chan *tunnel), done: make(chan struct{})}
}

// Tunnels returns the service's tunnels, for the daemon to Run.
func (s *Service) Tunnels() *Tunnels { return s.tunnels }

// ErrTunnelsClosed means the tunnels were asked for after Run returned.
var ErrTunnelsClosed = errors.New("tunnels are closed: the daemon is stopping")

// Run serves the tunnels Open makes until ctx is cancelled, closing those
// whose job has ended, and returns once every tunnel goroutine has.
func (t *Tunnels) Run(ctx context.Context) error {
	defer close(t.done)
	var wg sync.WaitGroup
	defer wg.Wait() // after closeAll: the listeners are closed, ctx ends the connections
	defer t.closeAll()
	tick := beat.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case tn := <-t.serve:
			wg.Go(func() { t.accept(ctx, tn) })
		case <-tick.C:
			t.closeEnded(ctx)
		}
	}
}

// Open returns the tunnel to port of job ref, opening it if needed.
func (t *Tunnels) Open(ctx context.Context, ref string, port int) (Tunnel, error) {
	if port <= 0 || port > 65535 {
		return Tunnel{}, fmt.Errorf("%w: port must be between 1 and 65535", ErrInvalid)
	}
	j, err := t.svc.Job(ctx, ref)
	if err != nil {
		return Tunnel{}, err
	}
	if j.State != jobs.Running {
		return Tunnel{}, fmt.Errorf("%w: job %s is %s, not running", ErrInvalid, j.Name, j.State)
	}
	if _, ok := j.Ports[port]; !ok {
		return Tunnel{}, fmt.Errorf("%w: job %s publishes no port %d (it publishes %v); launch it with --port %d", ErrInvalid, j.Name, port, sortedPorts(j.Ports), port)
	}
	// The node decides who may reach into its job: ask before listening.
	if err := (jobs.Client{Conn: t.svc.Peer(j.Node)}).Access(ctx, j.ID); err != nil {
		return Tunnel{}, err
	}
	return t.listen(ctx, j, port)
}

// listen opens the tunnel to port of j, or returns the one open, and hands
// a new one to Run.
func (t *Tunnels) listen(ctx context.Context, j Job, port int) (Tunnel, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := tunnelKey{JobRef(j.Job), port}
	if tn, ok := t.open[key]; ok {
		return tn.Tunnel, nil
	}
	l, err := listenTunnel() // never on the web UI's host (tunnelhost.go)
	if err != nil {
		return Tunnel{}, err
	}
	tn := &tunnel{Tunnel: Tunnel{Job: j.ID, Port: port, URL: "http://" + l.Addr().String() + "/"}, node: j.Node, l: l}
	select {
	case t.serve <- tn:
	case <-t.done:
		l.Close()
		return Tunnel{}, ErrTunnelsClosed
	case <-ctx.Done():
		l.Close()
		return Tunnel{}, ctx.Err()
	}
	t.open[key] = tn
	t.log.Info("opened tunnel", "job", j.ID, "port", port, "url", tn.URL)
	return tn.Tunnel, nil
}

func sortedPorts(m map[int]int) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// List returns the open tunnels.
func (t *Tunnels) List() []Tunnel {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []Tunnel{}
	for _, tn := range t.open {
		out = append(out, tn.Tunnel)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].URL < out[k].URL })
	return out
}

// accept forwards each connection to tn until its listener is closed, and
// returns once every connection it forwards has ended.
func (t *Tunnels) accept(ctx context.Context, tn *tunnel) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := tn.l.Accept()
		if err != nil {
			return // closed
		}
		wg.Go(func() { t.forward(ctx, tn, c) })
	}
}

// forward carries one TCP connection over one request stream to the node:
// the request body goes to the container, the reply body comes back.
func (t *Tunnels) forward(ctx context.Context, tn *tunnel, c net.Conn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, err := io.Copy(pw, c)
		pw.CloseWithError(err)
	}()
	defer func() {
		c.Close()  // ends the copy's read
		pr.Close() // ends its write, should the request not have read it all
		<-sent
	}()
	body, err := jobs.Client{Conn: t.svc.Peer(tn.node)}.Tunnel(ctx, tn.Job, tn.Port, pr)
	if err != nil {
		t.log.Warn("tunnel connection", "job", tn.Job, "port", tn.Port, "err", err)
		return
	}
	defer body.Close()
	stop := context.AfterFunc(ctx, func() { body.Close() }) // a quiet stream ends with ctx
	defer stop()
	io.Copy(c, body)
}

func (t *Tunnels) closeEnded(ctx context.Context) {
	t.mu.Lock()
	keys := make([]tunnelKey, 0, len(t.open))
	for k := range t.open {
		keys = append(keys, k)
	}
	t.mu.Unlock()
	for _, k := range keys {
		j, err := t.svc.Job(ctx, k.job)
		if err == nil && active(j.State) {
			continue
		}
		t.mu.Lock()
		if tn := t.open[k]; tn != nil {
			tn.l.Close()
			delete(t.open, k)
		}
		t.mu.Unlock()
	}
}

func (t *Tunnels) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, tn := range t.open {
		tn.l.Close()
		delete(t.open, k)
	}
}

// Open returns a tunnel to a job's container port (see Tunnels.Open).
func (s *Service) Open(ctx context.Context, ref string, port int) (Tunnel, error) {
	return s.tunnels.Open(ctx, ref, port)
}

// TunnelList returns the open tunnels.
func (s *Service) TunnelList(ctx context.Context) ([]Tunnel, error) {
	return s.tunnels.List(), nil
}
