//go:build linux

package containers

import (
	"context"
	"testing"
)

// TestIsGone: the engine's answer for a container that is not there is
// recognised through the wrapping of this package's errors (the job
// manager then drops the job's container instead of failing).
func TestIsGone(t *testing.T) {
	r := openRuntime(t)
	err := r.Remove(context.Background(), "ff6fc867b7f84ed195bb6f065af64a0073a3f0c5a8aa55ef79c8435bb6b398d5")
	if err == nil || !IsGone(err) {
		t.Errorf("Remove of a container that is not there = %v; IsGone false", err)
	}
	if _, err := r.Inspect(context.Background(), "ff6fc867b7f8"); !IsGone(err) {
		t.Errorf("Inspect = %v; IsGone false", err)
	}
}
