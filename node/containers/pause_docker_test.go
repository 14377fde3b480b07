//go:build linux

package containers

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestDockerPause: on a real engine a running container pauses (the
// engine then reads it paused), resumes, and, paused, still stops (a
// guest's owner may stop a job its lender paused) within the stop's
// timeout.
func TestDockerPause(t *testing.T) {
	r := openRuntime(t)
	ctx := context.Background()
	name := fmt.Sprintf("lp-pause-%d", time.Now().UnixNano())
	c, err := r.Run(ctx, launch(name, "sleep", "3600"))
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, c.ID)
	if err := r.Pause(ctx, c.ID); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if ins, err := r.managed(ctx, c.ID); err != nil || !ins.State.Paused || !ins.State.Running {
		t.Fatalf("after Pause: %+v, %v; want paused (and running)", ins.State, err)
	}
	if err := r.Unpause(ctx, c.ID); err != nil {
		t.Fatalf("Unpause: %v", err)
	}
	if ins, _ := r.managed(ctx, c.ID); ins.State.Paused {
		t.Fatal("after Unpause: still paused")
	}
	if err := r.Unpause(ctx, c.ID); err != nil {
		t.Errorf("Unpause of a running container: %v; want none", err)
	}
	if err := r.Pause(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(ctx, c.ID, time.Second); err != nil {
		t.Fatalf("Stop of a paused container: %v", err)
	}
	if ins, _ := r.managed(ctx, c.ID); ins.State.Running {
		t.Errorf("a paused container stopped still runs: %+v", ins.State)
	}
}
