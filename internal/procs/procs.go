// Package procs keeps a long-running process on few Ps while it is idle and
// on every core while it has parallel work.
//
// An idle agent wakes a few times a second (samples, replication, mDNS);
// with several Ps the Go scheduler spins looking for work on each wake-up,
// which costs more than the work itself. The daemon calls SetIdle(1) at
// start; code that really runs in parallel (a copy, serving a copy's
// blocks) holds Acquire's claim for its duration: the first holder raises
// GOMAXPROCS to its full value, the last release lowers it again once no
// one held it for Linger.
//
// Until SetIdle is called, or when the user set GOMAXPROCS in the
// environment, Acquire and its release change nothing.
//
// It also orders the process's work: bulk work (a copy) steps aside for
// urgent work (telemetry, control requests) through Yield (urgent.go).
package procs

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// Linger is how long GOMAXPROCS stays raised after the last release, so
// that a copy's back-to-back requests do not stop the world (as
// runtime.GOMAXPROCS does) on every one.
const Linger = time.Second

// claims is the process's one GOMAXPROCS policy.
type claims struct {
	sync.Mutex
	idle    int           // GOMAXPROCS when no one holds a claim; 0 = not managed
	full    int           // GOMAXPROCS while someone does
	holders int           // claims not yet released
	linger  time.Duration // see Linger
	lower   *time.Timer   // pending lowering, after the last release
	gen     int           // which lowering is the pending one
}

var state claims

// SetIdle makes n (at least 1) the GOMAXPROCS of this process while no one
// holds a claim, and sets it now if no one does. The full value is
// GOMAXPROCS as the runtime chose it, read at the first call. It does
// nothing when the environment sets GOMAXPROCS: the user's choice stands.
func SetIdle(n int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	state.setIdle(n, Linger)
}

func (s *claims) setIdle(n int, linger time.Duration) {
	s.Lock()
	defer s.Unlock()
	if s.idle == 0 {
		s.full = runtime.GOMAXPROCS(0)
	}
	s.idle, s.linger = min(max(n, 1), s.full), linger
	if s.holders == 0 {
		s.stopLowering()
		runtime.GOMAXPROCS(s.idle)
	}
}

// Acquire claims every core for parallel work until release is called
// (once; later calls do nothing).
func Acquire() (release func()) {
	return state.acquire()
}

func (s *claims) acquire() (release func()) {
	s.Lock()
	defer s.Unlock()
	if s.idle == 0 {
		return func() {}
	}
	s.holders++
	s.stopLowering()
	runtime.GOMAXPROCS(s.full) // returns at once when it is already full
	var once sync.Once
	return func() { once.Do(s.release) }
}

func (s *claims) release() {
	s.Lock()
	defer s.Unlock()
	s.holders--
	if s.holders > 0 {
		return
	}
	if s.linger <= 0 {
		runtime.GOMAXPROCS(s.idle)
		return
	}
	s.gen++
	gen := s.gen
	s.lower = time.AfterFunc(s.linger, func() { s.lowerIfFree(gen) })
}

// lowerIfFree lowers GOMAXPROCS unless someone claimed it since the
// lowering gen was planned.
func (s *claims) lowerIfFree(gen int) {
	s.Lock()
	defer s.Unlock()
	if s.holders == 0 && s.lower != nil && s.gen == gen {
		s.lower = nil
		runtime.GOMAXPROCS(s.idle)
	}
}

// stopLowering cancels a pending lowering; s is locked.
func (s *claims) stopLowering() {
	if s.lower != nil {
		s.lower.Stop()
		s.lower = nil
	}
}
