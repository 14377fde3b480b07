package jobs

import (
	"context"
	"strings"
	"testing"
)

// TestQueuedMessageNames: a job queued behind another says which job holds
// the GPUs by name and whose it is by member name, once for all the GPUs
// it holds, in a line a person reads; never the 64-character device ID.
func TestQueuedMessageNames(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 8, &memStore{})
	alice := "ALIC-" + strings.Repeat("EAAAAAA-", 7) + "AAAA"
	bob := "BOBB-" + strings.Repeat("EBBBBBB-", 7) + "BBBB"
	m.cfg.MemberName = func(id string) string {
		return map[string]string{alice: "alice", bob: "bob"}[id]
	}
	ctx := context.Background()
	if _, err := m.Submit(ctx, member(alice), Spec{Image: "img", Name: "train-bert", GPUs: 8}); err != nil {
		t.Fatal(err)
	}
	q, err := m.Submit(ctx, member(bob), Spec{Image: "img", Name: "sweep", GPUs: 4, Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	if q.State != Queued {
		t.Fatalf("second job %s, want queued", q.State)
	}
	want := "4 GPUs asked, 0 free: GPUs 0, 1, 2, 3, 4, 5, 6, 7: job train-bert of alice"
	if !strings.Contains(q.Error, want) || len(q.Error) > 200 || strings.Contains(q.Error, alice) {
		t.Errorf("queued message %q (%d characters), want it to say %q", q.Error, len(q.Error), want)
	}

	// Without names (a member this machine does not know yet), the short ID.
	m.cfg.MemberName = func(string) string { return "" }
	q2, _ := m.Submit(ctx, member(bob), Spec{Image: "img", GPUs: 1, Queue: true})
	if !strings.Contains(q2.Error, "job train-bert of ALIC-EAAA") || strings.Contains(q2.Error, alice) {
		t.Errorf("queued message without names %q", q2.Error)
	}
}
