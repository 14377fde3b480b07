package procs

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// onFourPs runs the test as on a machine of 4 Ps (whatever this one has)
// and restores GOMAXPROCS afterwards.
func onFourPs(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

func wantProcs(t *testing.T, want int, when string) {
	t.Helper()
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("%s: GOMAXPROCS = %d, want %d", when, got, want)
	}
}

func TestUnmanagedChangesNothing(t *testing.T) {
	onFourPs(t)
	var s claims
	release := s.acquire()
	wantProcs(t, 4, "held, never set idle")
	release()
	wantProcs(t, 4, "released, never set idle")
}

func TestEnvironmentWins(t *testing.T) {
	onFourPs(t)
	t.Setenv("GOMAXPROCS", "4")
	SetIdle(1)
	wantProcs(t, 4, "SetIdle with GOMAXPROCS in the environment")
	Acquire()()
	wantProcs(t, 4, "after a claim")
}

func TestFirstRaisesLastLowers(t *testing.T) {
	onFourPs(t)
	var s claims
	s.setIdle(1, 0)
	wantProcs(t, 1, "idle")
	a := s.acquire()
	wantProcs(t, 4, "one claim")
	b := s.acquire()
	a()
	a() // a second call of one release does nothing
	wantProcs(t, 4, "the first released, the second held")
	b()
	wantProcs(t, 1, "both released")
}

func TestIdleNotAboveFull(t *testing.T) {
	onFourPs(t)
	var s claims
	s.setIdle(8, 0)
	wantProcs(t, 4, "idle asked above the full value")
	s.setIdle(0, 0)
	wantProcs(t, 1, "idle asked below 1")
}

func TestSetIdleWhileHeldWaitsForRelease(t *testing.T) {
	onFourPs(t)
	var s claims
	s.setIdle(2, 0)
	release := s.acquire()
	s.setIdle(1, 0)
	wantProcs(t, 4, "idle changed while held")
	release()
	wantProcs(t, 1, "released")
}

func TestLinger(t *testing.T) {
	onFourPs(t)
	synctest.Test(t, func(t *testing.T) {
		var s claims
		s.setIdle(1, time.Second)
		s.acquire()()
		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		wantProcs(t, 4, "just before the linger ends")

		again := s.acquire() // a claim within the linger cancels the lowering
		time.Sleep(2 * time.Second)
		synctest.Wait()
		wantProcs(t, 4, "claimed again within the linger, held past it")
		again()
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		wantProcs(t, 1, "after the linger")
	})
}

// TestConcurrentClaims races claims and releases: every holder sees every
// core, and the last release lowers GOMAXPROCS, with and without a linger.
func TestConcurrentClaims(t *testing.T) {
	onFourPs(t)
	for _, linger := range []time.Duration{0, time.Millisecond} {
		runtime.GOMAXPROCS(4) // the full value a new claims reads
		var s claims
		s.setIdle(1, linger)
		var wg sync.WaitGroup
		errs := make(chan int, 64)
		for range 16 {
			wg.Go(func() {
				for range 50 {
					release := s.acquire()
					if n := runtime.GOMAXPROCS(0); n != 4 {
						select {
						case errs <- n:
						default:
						}
					}
					release()
				}
			})
		}
		wg.Wait()
		close(errs)
		for n := range errs {
			t.Errorf("linger %v: a holder saw GOMAXPROCS = %d, want 4", linger, n)
		}
		s.Lock()
		if s.holders != 0 {
			t.Errorf("linger %v: %d holders after every release", linger, s.holders)
		}
		s.Unlock()
		if linger == 0 {
			wantProcs(t, 1, "every claim released")
			continue
		}
		s.Lock() // the pending lowering, done now rather than waited for
		gen := s.gen
		s.Unlock()
		s.lowerIfFree(gen)
		wantProcs(t, 1, "every claim released, the linger over")
		s.Lock()
		s.stopLowering()
		s.Unlock()
	}
}
