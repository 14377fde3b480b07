package jobs

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labpool/labpool/node/peerapi"
)

// rewriteTo sends every request to a test server's address, as the pool's
// transport sends "https://node/..." to the machine it is pinned to.
type rewriteTo string

func (addr rewriteTo) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = "http", string(addr)
	return http.DefaultTransport.RoundTrip(r)
}

// httpDoer is a peerapi.Doer over hc: the pool's transport, as a machine's
// typed clients reach another over real HTTP.
type httpDoer struct{ hc *http.Client }

func (d httpDoer) Do(ctx context.Context, node string, r peerapi.Request) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, "https://node"+r.Path, r.Body)
	if err != nil {
		return nil, err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return resp.Body, nil
}

// httpClientOf is the typed client of X's jobs API over hc.
func httpClientOf(hc *http.Client) Client { return Client{peerapi.Conn{Doer: httpDoer{hc}, Node: "X"}} }

// replicaStore is X's store, as the pool's replica: every save is
// signalled to the home (saved), and held says how many of X's GPUs its
// records show held, as a planner reading them counts.
type replicaStore struct {
	*memStore
	saved chan struct{}
}

func (s replicaStore) SaveJob(j Job) error {
	err := s.memStore.SaveJob(j)
	select {
	case s.saved <- struct{}{}:
	default:
	}
	return err
}

func (s replicaStore) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, j := range s.jobs {
		if j.State == Running || j.State == Starting {
			n += len(j.GPUs)
		}
	}
	return n
}

// runAgent runs m until the benchmark ends.
func runAgent(b *testing.B, m *Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
}

// BenchmarkQueuedStartsElsewhere: how long after a machine anywhere frees
// the GPUs a job queued pool-wide on another machine asks for, that job
// starts there. Two in-process agents (their Run loops, the handler, the
// offer over real loopback HTTP): the home is full; X is full with the job
// handed over before; X's job ends, and the next queued job starts on X.
// The home sees X through a replica: "instant", X's job records as they
// are saved, each save waking the home's queue (Config.PoolChanged, as the
// daemon wires it to the replica's commits); "1s", what X publishes once a
// second, as its telemetry does (a GPU's processes linger in it until the
// next sample). Before the pool-wide queue the job never started on X: it
// waited for its home.
func BenchmarkQueuedStartsElsewhere(b *testing.B) {
	for _, tt := range []struct {
		name         string
		replicaEvery time.Duration
	}{{"replica=1s", time.Second}, {"replica=instant", 0}} {
		b.Run(tt.name, func(b *testing.B) { benchHandOver(b, tt.replicaEvery) })
	}
}

func benchHandOver(b *testing.B, replicaEvery time.Duration) {
	alice, aliceID := testSigner(1)
	roles := map[string]string{aliceID: RoleMember, "HOME": RoleMember}
	started := make(chan string, 16)
	xrt := newFakeRuntime()
	xrt.startFn = func(t Task) (TaskStatus, error) {
		started <- t.Labels[LabelJob]
		return TaskStatus{}, nil
	}
	changed := make(chan struct{}, 1) // the home's PoolChanged
	xst := replicaStore{&memStore{}, make(chan struct{}, 1)}
	cfg := DefaultConfig()
	cfg.Node, cfg.Role = "X", func(id string) string { return roles[id] }
	x := NewManager(cfg, xrt, fixedGPUs(fakeGPUs(2)), nil, xst, testLog())
	runAgent(b, x)
	srv := httptest.NewServer(Handler(x, func(*http.Request) Caller { return Caller{ID: "HOME", Role: RoleMember} }))
	b.Cleanup(srv.Close)
	hc := &http.Client{Transport: rewriteTo(srv.Listener.Addr().String())}

	var free atomic.Int64 // X's free GPUs as the home's replica has them
	publish := func() {
		if old := free.Swap(int64(2 - xst.held())); old != free.Load() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
	stop := make(chan struct{})
	b.Cleanup(func() { close(stop) })
	go func() {
		every := replicaEvery
		if every == 0 {
			every = time.Hour // saves alone publish
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-xst.saved:
				if replicaEvery == 0 {
					publish()
				}
			case <-tick.C:
				publish()
			}
		}
	}()
	hcfg := DefaultConfig()
	hcfg.Node, hcfg.PoolChanged = "HOME", changed
	hcfg.Targets = func(spec Spec) []Target {
		f := int(free.Load())
		return []Target{{Node: "X", Name: "X", Fits: f >= spec.GPUs, Why: "busy"}}
	}
	hcfg.Offer = func(ctx context.Context, _ string, o Offer) (OfferAnswer, error) {
		return httpClientOf(hc).Offer(ctx, o)
	}
	hrt := newFakeRuntime()
	home := NewManager(hcfg, hrt, fixedGPUs(fakeGPUs(2)), nil, &memStore{}, testLog())
	runAgent(b, home)
	ctx := context.Background()
	if _, err := home.Submit(ctx, Caller{ID: "HOME"}, Spec{Image: "own", GPUs: 2}); err != nil {
		b.Fatal(err)
	}
	prev, err := x.Submit(ctx, Caller{ID: "X"}, Spec{Image: "own", GPUs: 2})
	if err != nil {
		b.Fatal(err)
	}
	<-started
	for free.Load() != 0 {
		time.Sleep(time.Millisecond)
	}
	phase := rand.New(rand.NewPCG(1, 2))
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		spec := anywhereSpec(2)
		spec.Name = "q"
		proof, _ := alice.Prove("HOME", spec)
		j, err := home.SubmitProven(ctx, member(aliceID), spec, proof)
		if err != nil || j.State != Queued {
			b.Fatalf("queue: %v %v", j.State, err)
		}
		for w, _ := home.Get(j.ID); !strings.HasPrefix(w.Error, "waits on"); w, _ = home.Get(j.ID) {
			time.Sleep(time.Millisecond) // the home weighed the pool and found X full
		}
		time.Sleep(time.Duration(phase.IntN(1000)) * time.Millisecond) // X frees at any phase of the replica's and the queue's ticks
		t0 := time.Now()
		xrt.exit(prev.Container, 0) // X frees its GPUs
		if id := <-started; id != j.ID {
			b.Fatalf("X started %s, want %s", id, j.ID)
		}
		took = append(took, time.Since(t0))
		for prev, err = x.Get(j.ID); err != nil || prev.State != Running; prev, err = x.Get(j.ID) {
			time.Sleep(time.Millisecond)
		}
		for free.Load() != 0 { // the replica shows X full again before the next round
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e6, "median-ms")
	b.ReportMetric(float64(took[len(took)*9/10])/1e6, "p90-ms")
}
