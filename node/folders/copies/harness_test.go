package copies_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// peerHeader stands for the device TLS proves (the daemon reads
// transport.PeerID): each machine's clients set it to their own ID.
const peerHeader = "Test-Peer"

// lab is a pool of machines, each an httptest server over loopback that
// serves its shares and its copies as a daemon's peer mux does.
type lab struct {
	t        *testing.T
	mu       sync.Mutex // guards machines
	machines map[string]*machine
}

// machine is one member: its key, shares, copy engine and server.
type machine struct {
	lab     *lab
	name    string
	id      string
	priv    ed25519.PrivateKey
	reg     *folders.Registry
	store   *memSettings
	rcv     atomic.Pointer[copies.Receiver] // replaced by a restart
	srv     *httptest.Server
	changed chan string                          // shares a copy wrote into
	removed chan string                          // shares the engine removed (a local source withdrawn)
	blocked atomic.Bool                          // its data clients wait for data until cancelled
	via     atomic.Pointer[peerapitest.Loopback] // set: its peer calls go there
	conns   atomic.Int64                         // connections its server accepted
	stop    context.CancelFunc
	runErr  chan error
}

func newLab(t *testing.T) *lab { return &lab{t: t, machines: map[string]*machine{}} }

// add starts a machine named name with a fresh key and settings store.
func (l *lab) add(name string) *machine {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		l.t.Fatal(err)
	}
	m := &machine{lab: l, name: name, id: folders.DeviceID(pub), priv: priv, store: &memSettings{}, removed: make(chan string, 16)}
	cfg := folders.DefaultConfig()
	cfg.Self, cfg.DataDir = m.id, l.t.TempDir()
	if m.reg, err = folders.OpenWith(cfg, &memShares{}); err != nil {
		l.t.Fatal(err)
	}
	mux := http.NewServeMux() // mounts the tables, as node/agent's PeerHandler
	caller := func(r *http.Request) folders.Caller {
		return folders.Caller{ID: r.Header.Get(peerHeader), Role: "member"}
	}
	fh := folders.Handler(m.reg, folders.Access{Caller: caller, Role: func(string) string { return "member" }})
	for _, s := range folders.Routes.Specs() {
		mux.Handle(s.Pattern(), fh)
	}
	th := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.rcv.Load().Handler(caller).ServeHTTP(w, r) })
	for _, s := range copies.Routes.Specs() {
		mux.Handle(s.Pattern(), th)
	}
	m.srv = httptest.NewUnstartedServer(mux)
	m.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			m.conns.Add(1)
		}
	}
	m.srv.Start()
	l.t.Cleanup(m.srv.Close)
	l.mu.Lock()
	l.machines[name] = m
	l.mu.Unlock()
	m.start()
	return m
}

// start runs a new Receiver on the machine's store, as a restarted daemon.
func (m *machine) start() {
	changed := make(chan string, 16)
	m.changed = changed
	cfg := copies.DefaultConfig()
	cfg.Self = m.id
	signer := folders.Signer{Key: m.priv.Public().(ed25519.PublicKey), Sign: func(b []byte) []byte { return ed25519.Sign(m.priv, b) }}
	m.rcv.Store(copies.New(cfg, copies.Deps{Folders: removals{m.reg, m.removed}, Store: m.store, Dialer: m, Members: m, Signer: signer,
		Changed: func(_ context.Context, folder string) { changed <- folder }}))
	ctx, cancel := context.WithCancel(context.Background())
	m.stop, m.runErr = cancel, make(chan error, 1)
	rcv := m.rcv.Load()
	go func() { m.runErr <- rcv.Run(ctx) }()
	m.lab.t.Cleanup(m.halt)
}

// halt cancels Run and waits for it to return.
func (m *machine) halt() {
	m.stop()
	if err := <-m.runErr; err != nil {
		m.lab.t.Errorf("Run of %s: %v", m.name, err)
	}
	m.runErr <- nil // halt again: done
}

func (l *lab) byID(id string) (*machine, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.machines {
		if m.id == id {
			return m, true
		}
	}
	return nil, false
}

// NodeDataClient implements copies.Dialer: a client of the member id that
// carries this machine's ID.
func (m *machine) NodeDataClient(id string) (*http.Client, error) {
	to, ok := m.lab.byID(id)
	if !ok {
		return nil, fmt.Errorf("no address known for %s", id)
	}
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if m.blocked.Load() && !strings.HasSuffix(r.URL.Path, "/walk") {
			<-r.Context().Done() // the data never comes
			return nil, r.Context().Err()
		}
		r = r.Clone(r.Context())
		u, _ := url.Parse(to.srv.URL)
		r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
		r.Header.Set(peerHeader, m.id)
		return http.DefaultTransport.RoundTrip(r)
	})}, nil
}

// Resolve implements copies.Members: machines by name.
func (m *machine) Resolve(_ context.Context, ref string) (string, error) {
	m.lab.mu.Lock()
	defer m.lab.mu.Unlock()
	if to, ok := m.lab.machines[ref]; ok {
		return to.id, nil
	}
	return "", fmt.Errorf("no member %q", ref)
}

// Do implements copies.Members over the member's server.
func (m *machine) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	if l := m.via.Load(); l != nil {
		return l.Do(ctx, node, r)
	}
	hc, err := m.NodeDataClient(node)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, "https://node"+r.Path, r.Body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, &refusal{status: resp.StatusCode, body: string(b)}
	}
	return resp.Body, nil
}

// refusal is a member's answer other than 200.
type refusal struct {
	status int
	body   string
}

func (e *refusal) Error() string { return fmt.Sprintf("%d %s", e.status, e.body) }

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// memSettings is a copies.Store in memory, kept across restarts of a
// machine's Receiver.
type memSettings struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *memSettings) Setting(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok, nil
}

func (s *memSettings) SetSetting(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[key] = value
	return nil
}

// memShares is a folders.Store in memory.
type memShares struct {
	mu     sync.Mutex
	shares []folders.Share
}

func (s *memShares) LoadShares() ([]folders.Share, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shares, nil
}

func (s *memShares) SaveShares(list []folders.Share) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shares = list
	return nil
}

// removals is a registry that tells what the engine removes.
type removals struct {
	*folders.Registry
	removed chan<- string
}

func (r removals) Remove(name string) error {
	err := r.Registry.Remove(name)
	r.removed <- name
	return err
}
