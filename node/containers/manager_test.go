package containers

import (
	"io"
	"log/slog"
	"sync"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// What a jobs.Manager needs besides its executor, for the tests that run
// one over the Docker executor.

// noGPUs is a machine with the GPUs in it (none by default).
type noGPUs []gpu.Stats

func (g noGPUs) GPUs() []gpu.Stats { return g }

// jobStore keeps job records in memory.
type jobStore struct {
	mu      sync.Mutex // guards jobs, private
	jobs    map[string]jobs.Job
	private map[string]jobs.Private
}

func (s *jobStore) SaveJob(j jobs.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]jobs.Job{}
	}
	s.jobs[j.ID] = j
	return nil
}

func (s *jobStore) LoadJobs() ([]jobs.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jobs.Job
	for _, j := range s.jobs {
		out = append(out, j)
	}
	return out, nil
}

func (s *jobStore) SavePrivate(id string, p jobs.Private) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.private == nil {
		s.private = map[string]jobs.Private{}
	}
	s.private[id] = p
	return nil
}

func (s *jobStore) LoadPrivate(id string) (jobs.Private, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.private[id], nil
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
