package nodestore

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// slowHealth is a jobs.HealthStore whose writes wait until release is
// closed, and that keeps the states written, in order.
type slowHealth struct {
	release chan struct{}
	mu      sync.Mutex // guards saved
	saved   []jobs.HealthState
}

func (s *slowHealth) SaveHealth(st jobs.HealthState) error {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, st)
	return nil
}

func (s *slowHealth) LoadHealth() (jobs.HealthState, error) { return jobs.HealthState{}, nil }

func (s *slowHealth) written() []jobs.HealthState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]jobs.HealthState(nil), s.saved...)
}

// TestQuarantineDoesNotWaitOnSlowStore: the job manager's annotation of a
// sample that quarantines GPUs (run in the telemetry's tick) returns while
// the store takes no write; once it answers, the latest quarantines are
// kept, none lost, the last ones by Close.
func TestQuarantineDoesNotWaitOnSlowStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := slog.New(slog.DiscardHandler)
		st := &slowHealth{release: make(chan struct{})}
		w := NewHealthWriter(st, log)
		jcfg := jobs.DefaultConfig()
		jcfg.Node = "self"
		jcfg.Devices = []gpu.Info{{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}}
		m := jobs.NewManager(jcfg, nil, nil, nil, nopJobs{}, log)
		if err := m.OpenHealth(t.Context(), w, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()

		annotated := make(chan struct{})
		go func() {
			for i, uuid := range []string{"GPU-0", "GPU-1"} {
				m.AnnotateGPUs(time.Now(), []gpu.Stats{{Index: i, UUID: uuid, Health: gpu.HealthQuarantined, HealthReason: "xid 79"}}, &alloc.Holding{})
				time.Sleep(time.Second)
			}
			close(annotated)
		}()
		select {
		case <-annotated:
		case <-time.After(10 * time.Second):
			t.Fatal("the samples' annotation waits on the store")
		}
		if got := st.written(); len(got) != 0 {
			t.Fatalf("%d states written before the store answered", len(got))
		}
		close(st.release)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		w.Close()
		got := st.written()
		if len(got) == 0 {
			t.Fatal("no state written")
		}
		last := got[len(got)-1]
		if _, ok := last.Quarantined["GPU-0"]; !ok || len(last.Quarantined) != 2 {
			t.Errorf("kept %v; want GPU-0 and GPU-1 quarantined", last.Quarantined)
		}
	})
}

// nopJobs is a job store that keeps nothing.
type nopJobs struct{}

func (nopJobs) SaveJob(jobs.Job) error                   { return nil }
func (nopJobs) LoadJobs() ([]jobs.Job, error)            { return nil, nil }
func (nopJobs) SavePrivate(string, jobs.Private) error   { return nil }
func (nopJobs) LoadPrivate(string) (jobs.Private, error) { return jobs.Private{}, nil }
