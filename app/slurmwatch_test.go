package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// slowStore is a holdStore whose writes wait until release is closed, and
// that keeps the holds it was given, in order.
type slowStore struct {
	release chan struct{}
	mu      sync.Mutex // guards the fields below
	calls   int        // Appends begun
	keys    []string   // the holds written, by key, in order
	prunes  int
}

func (s *slowStore) Append(_ context.Context, _, kind, key string, _ time.Time, data []byte) (store.Record, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	<-s.release
	var h SlurmHold
	if kind != KindSlurmHold || json.Unmarshal(data, &h) != nil || h.Key() != key {
		return store.Record{}, fmt.Errorf("not a hold: %s %s", kind, key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, key)
	return store.Record{}, nil
}

func (s *slowStore) Prune(context.Context, string, time.Time) (int64, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prunes++
	return 0, nil
}

func (s *slowStore) Range(context.Context, string, string, time.Time, time.Time) ([]store.Record, error) {
	return nil, nil
}

func (s *slowStore) written() (calls int, keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, append([]string(nil), s.keys...)
}

// heldGPU is one GPU that a new Slurm job holds at each sample (as the
// compute node's process table would say: annotate).
type heldGPU struct {
	mu    sync.Mutex // guards taken
	taken []time.Time
}

// annotate names the GPU's holder in held: the Slurm job of the latest
// sample.
func (g *heldGPU) annotate(held *alloc.Holding) {
	g.mu.Lock()
	defer g.mu.Unlock()
	held.HoldGPU("GPU-0", alloc.Holder{Kind: alloc.SlurmJob, Name: fmt.Sprintf("slurm job %d", len(g.taken))})
}

func (g *heldGPU) Devices() []gpu.Info { return []gpu.Info{{Index: 0, UUID: "GPU-0"}} }

func (g *heldGPU) Sample(context.Context) ([]gpu.Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.taken = append(g.taken, time.Now())
	return []gpu.Stats{{Index: 0, UUID: "GPU-0"}}, nil
}

// wantKeys is what the samples taken so far make the store hold, in order:
// each sample's job starts, and the job before it ends.
func (g *heldGPU) wantKeys() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var keys []string
	for i := range g.taken {
		if i > 0 {
			keys = append(keys, fmt.Sprintf("slurm job %d@%d", i, g.taken[i-1].Unix()))
		}
		keys = append(keys, fmt.Sprintf("slurm job %d@%d", i+1, g.taken[i].Unix()))
	}
	return keys
}

type quietHost struct{}

func (quietHost) Info(context.Context) (host.Info, error)    { return host.Info{}, nil }
func (quietHost) Sample(context.Context) (host.Stats, error) { return host.Stats{}, nil }

// TestTickDoesNotWaitOnSlowStore: while the replica takes no write, the
// telemetry still publishes a sample every second, each annotated with the
// Slurm job holding its GPU; once the store answers, every hold observed
// is written, in the order observed, none lost (the last ones by Close).
func TestTickDoesNotWaitOnSlowStore(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	synctest.Test(t, func(t *testing.T) {
		log := slog.New(slog.DiscardHandler)
		st := &slowStore{release: make(chan struct{})}
		// An empty process table: the holders are the GPU source's own.
		sp := NewSlurmWatch(t.Context(), t.TempDir(), st, NewSlurmJobs(db), "self", func() jobs.Policy { return jobs.Policy{} }, log)
		gpus := &heldGPU{}
		acfg := agent.DefaultConfig()
		acfg.Annotate = func(taken time.Time, gs []gpu.Stats, held *alloc.Holding) {
			gpus.annotate(held)
			sp.Annotate(taken, gs, held)
		}
		tel := agent.New(acfg, gpus, quietHost{}, log)
		samples, unsubscribe := tel.Subscribe()
		defer unsubscribe()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { tel.Run(ctx) })
		wg.Go(func() { sp.Run(ctx) })

		for i := range 10 {
			select {
			case s := <-samples:
				if want := fmt.Sprintf("slurm job %d", i+1); len(s.GPUs) != 1 || s.Holding.GPU("GPU-0").Scheduler() != want {
					t.Fatalf("sample %d: %+v; want its GPU held by %s", i, s.GPUs, want)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("no sample %d within 2 s while the store is slow: the tick waits on it", i)
			}
		}
		if calls, keys := st.written(); calls != 1 || len(keys) != 0 {
			t.Fatalf("store: %d writes begun, %d done; want the writer waiting on its first", calls, len(keys))
		}

		close(st.release)
		synctest.Wait()
		if _, keys := st.written(); fmt.Sprint(keys) != fmt.Sprint(gpus.wantKeys()) {
			t.Errorf("written once the store answers:\n%v\nwant\n%v", keys, gpus.wantKeys())
		}
		cancel()
		wg.Wait()
		sp.Close()
		if _, keys := st.written(); fmt.Sprint(keys) != fmt.Sprint(gpus.wantKeys()) {
			t.Errorf("written after Close:\n%v\nwant\n%v", keys, gpus.wantKeys())
		}
		if st.prunes != 1 {
			t.Errorf("%d prunes; want 1 (once an hour)", st.prunes)
		}
	})
}
