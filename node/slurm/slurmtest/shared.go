//go:build linux

package slurmtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Shared is one cluster for all the tests of a test binary that ask for
// it, started by the first (a cluster takes seconds to start) and stopped
// by Close, which the package's TestMain calls after m.Run:
//
//	var cluster = &slurmtest.Shared{}
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		cluster.Close()
//		os.Exit(code)
//	}
//
// Its tests take turns on it (none of them t.Parallel) and each cancels
// the jobs it started.
type Shared struct {
	Options Options // of the cluster; read once, by the first Get

	once sync.Once
	c    *Cluster
	base string // the temporary directory above c.Dir
	err  error
}

// Get returns the shared cluster, starting it on the first call. It skips
// t as Start does, and fails t when the cluster could not start. When t
// fails, its cleanup logs the daemons' logs.
func (s *Shared) Get(t testing.TB) *Cluster {
	t.Helper()
	requireSlurm(t)
	s.once.Do(s.start)
	if s.err != nil {
		t.Fatalf("slurmtest: shared cluster: %v", s.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("slurmtest: logs of the shared cluster:\n%s", s.c.Logs())
		}
	})
	return s.c
}

func (s *Shared) start() {
	// The cluster's directory is one level down: launch opens the parent
	// of its directory to the munge user, which must not be os.TempDir.
	s.base, s.err = os.MkdirTemp("", "slurmtest-")
	if s.err != nil {
		return
	}
	dir := filepath.Join(s.base, "cluster")
	if s.err = os.Mkdir(dir, 0o700); s.err != nil {
		return
	}
	s.c, s.err = launch(dir, s.Options)
	if s.err != nil {
		s.err = fmt.Errorf("in %s: %w", dir, s.err)
	}
}

// Close stops the cluster, if a test started it, and removes its
// directory. It is idempotent.
func (s *Shared) Close() {
	s.once.Do(func() { s.err = errors.New("closed before a test asked for it") })
	if s.c != nil {
		s.c.Close()
	}
	if s.base != "" {
		os.RemoveAll(s.base)
		s.base = ""
	}
}
