package jobs

import (
	"runtime"
	"testing"
	"time"
)

// noLeak fails t when more goroutines run than before, once those that are
// ending have had 3 s to go.
func noLeak(t *testing.T, before int) {
	t.Helper()
	for end := time.Now().Add(3 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before Run, %d after it returned:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
