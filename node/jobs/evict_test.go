package jobs

import (
	"context"
	"testing"
)

// TestEvictAfterRestart: an agent that starts again evicts a removed
// member's running job from the records it kept, before its Run has read
// them back (the daemon re-checks removals at start, beside Run).
func TestEvictAfterRestart(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	cfg := DefaultConfig()
	cfg.Node = "NODE"
	before := NewManager(cfg, rt, fixedGPUs(fakeGPUs(1)), nil, st, testLog())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- before.Run(runCtx) }()
	eventually(t, "the first adoption", func() bool { return rt.count("List") > 0 })
	ctx := context.Background()
	run, err := before.Submit(ctx, member("mallory"), Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, before, run.ID, Running)
	stop() // the agent stops; its job runs on
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	after := NewManager(cfg, rt, fixedGPUs(fakeGPUs(1)), nil, st, testLog())
	stops := rt.count("Stop")
	cancelled, stopped, err := after.Evict(ctx, "mallory")
	if err != nil || cancelled != 0 || stopped != 1 {
		t.Fatalf("Evict on the restarted agent = %d, %d, %v; want 0, 1, nil", cancelled, stopped, err)
	}
	if rt.count("Stop") != stops+1 {
		t.Errorf("the container was not stopped: calls %v", rt.callList()[len(rt.callList())-3:])
	}
	if j := st.job(run.ID); j.Error != evicted {
		t.Errorf("record after the eviction: %+v", j)
	}
}
