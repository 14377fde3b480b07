package leaktest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Errorf says.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	before := Count()
	done := make(chan struct{})
	go func() { time.Sleep(50 * time.Millisecond); close(done) }()
	Check(t, before, 3*time.Second) // one that is ending passes

	stop := make(chan struct{})
	go func() { <-stop }() // one that stays
	r := &recorder{TB: t}
	Check(r, before, 100*time.Millisecond)
	close(stop)
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "leaktest.TestCheck") {
		t.Errorf("a goroutine left behind: errors %q, want one naming it with its stack", r.errors)
	}
	Check(t, before, 3*time.Second)
}
