// Package leaktest checks, in tests, that the code under test left no
// goroutine behind: take Count before starting it, and Check after it has
// returned.
package leaktest

import (
	"runtime"
	"testing"
	"time"
)

// Count is how many goroutines run now: the baseline for Check.
func Count() int { return runtime.NumGoroutine() }

// Check fails t (t.Errorf) when more goroutines run than before, once those
// that are ending have had wait to go; the message carries every stack.
func Check(t testing.TB, before int, wait time.Duration) {
	t.Helper()
	if n, stacks := Settle(before, wait); stacks != "" {
		t.Errorf("%d goroutines before, %d after:\n%s", before, n, stacks)
	}
}

// Settle waits up to wait for the goroutine count to fall to before. It
// returns the count, and every goroutine's stack when it is still higher
// ("" otherwise).
func Settle(before int, wait time.Duration) (int, string) {
	for end := time.Now().Add(wait); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	n := runtime.NumGoroutine()
	if n <= before {
		return n, ""
	}
	return n, Stacks()
}

// Stacks is the stack of every goroutine (up to 1 MiB of text).
func Stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
