package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labpool/labpool/node/agent"
)

// ContentType is the media type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Path is where the metrics are served, as dcgm-exporter serves them.
const Path = "/metrics"

// Source gives the latest sample of this machine; *agent.Telemetry is one.
type Source interface {
	Latest() (agent.Sample, bool)
}

var _ Source = (*agent.Telemetry)(nil)

// Config configures a Server.
type Config struct {
	Addr        string // HOST:PORT to listen on, e.g. "127.0.0.1:9400"
	AllowRemote bool   // allow a non-loopback Addr (see CheckAddr)
	Hostname    string // the Hostname label; with AllowRemote also a Host served (CheckHost)
	// Hosts are further names a request may call this machine by with
	// AllowRemote (its DNS names, as Prometheus's targets name it).
	Hosts []string
	// Person names the person whose device a job's owner is (label
	// person); nil: the label is empty.
	Person func(member string) string
}

// Server serves the latest sample of a Source at Path.
type Server struct {
	cfg   Config
	src   Source
	owner func(job string) string
	name  func(member string) string
	log   *slog.Logger

	mu      sync.Mutex      // guards refused
	refused map[string]bool // Hosts refused and logged, at most maxRefused
}

// maxRefused bounds the Hosts remembered as logged.
const maxRefused = 64

// refusedOnce logs the refusal of host the first time it is seen.
func (s *Server) refusedOnce(host string, err error) {
	s.mu.Lock()
	seen := s.refused[host]
	if !seen && len(s.refused) < maxRefused {
		if s.refused == nil {
			s.refused = map[string]bool{}
		}
		s.refused[host] = true
	}
	s.mu.Unlock()
	if !seen {
		s.log.Warn("refused a metrics request", "host", host, "err", err)
	}
}

// New returns a server of src's samples; owner (may be nil) gives the owner
// of a job of this machine, name (may be nil) a member's name. It refuses
// an address CheckAddr refuses.
func New(cfg Config, src Source, owner func(job string) string, name func(member string) string, log *slog.Logger) (*Server, error) {
	if err := CheckAddr(cfg.Addr, cfg.AllowRemote); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, src: src, owner: owner, name: name, log: log}, nil
}

// ServeHTTP answers GET Path with the latest sample's metrics (none before
// the first sample).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.cfg.CheckHost(r.Host); err != nil {
		s.refusedOnce(r.Host, err)
		http.Error(w, err.Error(), http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	snap := Snapshot{Hostname: s.cfg.Hostname, Owner: s.owner, Name: s.name, Person: s.cfg.Person}
	if sm, ok := s.src.Latest(); ok {
		snap.GPUs, snap.Holding = sm.GPUs, sm.Holding
	}
	var buf bytes.Buffer
	if err := Write(&buf, snap); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// Run listens on Config.Addr and serves until ctx is cancelled.
func (s *Server) Run(ctx context.Context) error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen for metrics on %s: %w", s.cfg.Addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	s.log.Info("serving Prometheus metrics", "addr", l.Addr().String(), "path", Path)
	select {
	case err := <-errc:
		return fmt.Errorf("serve metrics: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve metrics: %w", err)
		}
		return nil
	}
}
