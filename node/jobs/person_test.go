package jobs

import (
	"context"

	"encoding/json"
	"errors"
	"github.com/labpool/labpool/node/alloc"
	"strings"
	"testing"
	"time"
)

// TestPersonActsOnOwnJobs: alice launches from her workstation; from her
// laptop (another device of hers) she stops it, reads its logs and sees
// its environment; bob's device still may not. A person's devices share
// one max-gpus-per-member limit.
func TestPersonActsOnOwnJobs(t *testing.T) {
	rt := newFakeRuntime()
	ws, laptop, bob := peer("alice-ws"), peer("alice-laptop"), peer("bob")
	persons := map[string]string{ws.ID: "alice", laptop.ID: "alice", bob.ID: "bob"}
	cfg := DefaultConfig()
	cfg.PersonOf = func(id string) string { return persons[id] }
	m := startManagerCfg(t, cfg, rt, fixedGPUs(fakeGPUs(4)), &memStore{}, nil)
	srv := trustServer(t, m)
	code, body := call(t, srv, ws, "POST", "/v1/jobs", `{"image":"img","env":["TOKEN=s3cret"]}`)
	var j Job
	if code != 200 || json.Unmarshal([]byte(body), &j) != nil {
		t.Fatalf("launch: %d %s", code, body)
	}
	if code, body := call(t, srv, bob, "POST", "/v1/jobs/"+j.ID+"/stop", ""); code != 403 {
		t.Fatalf("bob stops alice's job: %d %s; want 403", code, body)
	}
	if code, body := call(t, srv, laptop, "GET", "/v1/jobs/"+j.ID, ""); code != 200 || !strings.Contains(body, "s3cret") {
		t.Errorf("alice's laptop reads her job: %d %s; want it with its environment", code, body)
	}
	if code, body := call(t, srv, laptop, "GET", "/v1/jobs/"+j.ID+"/logs", ""); code != 200 {
		t.Errorf("alice's laptop reads her job's logs: %d %s", code, body)
	}
	if code, body := call(t, srv, laptop, "POST", "/v1/jobs/"+j.ID+"/stop", ""); code != 200 {
		t.Errorf("alice's laptop stops her job: %d %s; want 200", code, body)
	}

	p := m.Policy()
	p.Launch, p.MaxGPUsPerMember = LaunchMembers, 2
	if err := m.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.Submit(ctx, ws, Spec{Image: "img", GPUs: 2}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Submit(ctx, laptop, Spec{Image: "img", GPUs: 1, Queue: true})
	var re *RefusedError
	if !errors.As(err, &re) || re.Rule != "policy max-gpus-per-member=2" {
		t.Errorf("alice's laptop asks for a third GPU while her workstation holds two: %v; want the policy's refusal", err)
	}
	if _, err := m.Submit(ctx, bob, Spec{Image: "img", GPUs: 1}); err != nil {
		t.Errorf("bob's own GPU: %v", err)
	}
}

// TestQueueOrderByPerson: a person's two devices take one turn in the
// queue, and the pool-wide usage sums both.
func TestQueueOrderByPerson(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := func(id, owner string, min int) Job {
		return Job{ID: id, Owner: owner, Created: t0.Add(time.Duration(min) * time.Minute)}
	}
	person := map[string]string{"a-ws": "a", "a-laptop": "a", "b": "b"}
	of := func(id string) string { return person[id] }
	q := []Job{job("a1", "a-ws", 1), job("a2", "a-laptop", 2), job("a3", "a-ws", 3), job("b1", "b", 4)}
	var ids []string
	for _, j := range queueOrder(q, nil, nil, of) {
		ids = append(ids, j.ID)
	}
	if got := strings.Join(ids, " "); got != "a1 b1 a2 a3" {
		t.Errorf("order %q; want a1 b1 a2 a3 (alice's devices one turn)", got)
	}
	usage := DecayedUsage([]Job{{Owner: "a-ws", GPUSeconds: 3600}, {Owner: "a-laptop", GPUSeconds: 7200}, {Owner: "b", GPUSeconds: 3600}}, t0, UsageHalfLife, of)
	if usage["a"] != 3 || usage["b"] != 1 {
		t.Errorf("usage %v; want a 3, b 1 GPU-hours", usage)
	}
}

// TestReservationIsThePersons: a GPU reserved for alice (made from her
// workstation) takes a launch from her laptop now, and refuses bob's.
func TestReservationIsThePersons(t *testing.T) {
	rt := newFakeRuntime()
	persons := map[string]string{"alice-ws": "alice", "alice-laptop": "alice", "bob": "bob"}
	cfg := DefaultConfig()
	cfg.PersonOf = func(id string) string { return persons[id] }
	m := startManagerCfg(t, cfg, rt, fixedGPUs(fakeGPUs(1)), &memStore{}, nil)
	now := time.Now()
	m.Ledger().SetHeld("reservations", []alloc.Grant{{
		Holder: alloc.Holder{Kind: alloc.Reservation, ID: "rsv-1", Member: "alice-ws"},
		Units:  []string{"GPU-0000"}, From: now.Add(-time.Minute), Until: now.Add(time.Hour)}})
	if _, err := m.Submit(context.Background(), member("bob"), Spec{Image: "img", GPUs: 1}); err == nil {
		t.Fatal("bob launched on alice's reserved GPU")
	}
	if _, err := m.Submit(context.Background(), member("alice-laptop"), Spec{Image: "img", GPUs: 1}); err != nil {
		t.Errorf("alice's laptop on the GPU reserved for alice: %v", err)
	}
}
