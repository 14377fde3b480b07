package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Hand-over of a job queued pool-wide (Spec.Anywhere), in full:
//
//  1. The machine a job was launched on, its home, is its only authority
//     for as long as it waits. The queue lives there, never on the laptop
//     that asked.
//  2. When another machine X fits the job (the pool's replica says so:
//     Config.Targets) and the home cannot start it, the home first
//     records durably "offered to X under fence n" (Job.OfferedTo,
//     Job.Fence), then offers it (Offer). While the offer is outstanding
//     the job neither starts at home nor is offered elsewhere, and it is
//     not stopped (Stop answers ErrConflict).
//  3. X checks that the home may offer it (the owner proof names the home,
//     the owner, the job and a spec queued pool-wide; the environment and
//     the command line are the ones the owner bound to it), checks its
//     own ledger and policy, records the job under (job, fence) before it
//     launches it, launches it and answers. An offer X already holds
//     under that fence gets the same answer again; X never starts a job it
//     holds, whatever the fence.
//  4. The home marks the job moved (State Moved, Job.MovedTo) on an
//     acceptance, and on X's answer that it holds the job already. On a
//     refusal it puts the job back in its queue under fence n+1. With no
//     answer (a partition, a lost reply, X restarting) it asks X again
//     with the same (job, fence), however long that takes: X's answer, or
//     X's refusal, is the only way out of an offer.
//  5. X remembers the fences it refused, and refuses an offer under a fence
//     not above them: a retry of (job, n) still in flight after X refused
//     it, whose home has moved on to n+1, cannot start it. (This memory is
//     X's agent's; a restart ends the requests in flight with it.)
//
// So exactly one machine ever starts a job queued pool-wide: the home, or
// the one machine that accepted its one outstanding offer.

// Rules a hand-over breaks (OfferAnswer.Rule).
const (
	RuleHandoverHome     = "handover: only the job's home offers it"
	RuleHandoverAnywhere = "handover: its owner did not queue it pool-wide"
	RuleHandoverPrivate  = "handover: environment or command line not as the owner bound them"
	RuleHandoverForm     = "handover: malformed offer"
	RuleHandoverFence    = "handover: fence not above one refused here"
	RuleHandoverHere     = "handover: the job is on this machine already"
	RuleHandoverFit      = "handover: does not fit here now"
)

// Offer is what a job's home sends the machine it hands the job to: its
// record, with the environment, the command line and their salt, and the
// offer's fence.
type Offer struct {
	Job   Job    `json:"job"`
	Fence uint64 `json:"fence"`
}

// OfferAnswer is the answer to an Offer. Accepted: the machine holds the
// job under the offer's fence (Job is its record, public). Otherwise Rule
// names why not; RuleHandoverHere means it holds the job already, under
// another fence.
type OfferAnswer struct {
	Accepted bool   `json:"accepted"`
	Job      *Job   `json:"job,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// Target is another machine of the pool as the replica shows it, for one
// job queued pool-wide.
type Target struct {
	Node string // its device ID
	Name string // its name, for messages
	Fits bool   // what the job asks for is free there now
	Why  string // what it has ("1 of 4 GPUs free"), said when it does not fit
}

// PrivateDigest binds env and cmd to a spec (Spec.PrivateDigest): the hex
// SHA-256 of the salt and both lists; "" when both are empty.
func PrivateDigest(salt string, env, cmd []string) string {
	if len(env) == 0 && len(cmd) == 0 {
		return ""
	}
	b, _ := json.Marshal(struct {
		Salt string   `json:"salt"`
		Env  []string `json:"env"`
		Cmd  []string `json:"cmd"`
	}{salt, env, cmd})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// DecodeOffer reads an offer's body (network input).
func DecodeOffer(b []byte) (Offer, error) {
	var o Offer
	if len(b) > 2*maxSpec {
		return Offer{}, refuse(RuleHandoverForm, "%d bytes, at most %d", len(b), 2*maxSpec)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return Offer{}, refuse(RuleHandoverForm, "decode the offer: %v", err)
	}
	return o, nil
}

// checkOffer says whether from, a machine of the pool, may offer o: the
// owner proof is the owner's signature on a launch of the job's spec, queued
// pool-wide, on from; and the environment and command line are those the
// owner bound to it.
func checkOffer(from Caller, o Offer) *RefusedError {
	j := o.Job
	switch {
	case from.ID == "" || from.Role == "":
		return &RefusedError{Rule: RuleHandoverHome, Detail: "the offer comes from no machine of the pool", Forbidden: true}
	case o.Fence == 0 || !jobIDLabel.MatchString(j.ID):
		return &RefusedError{Rule: RuleHandoverForm, Detail: "an offer names a job ID and a fence above 0"}
	case !j.Spec.Anywhere || !j.Spec.Queue:
		return &RefusedError{Rule: RuleHandoverAnywhere, Detail: "job " + j.ID + " was launched for its home alone", Forbidden: true}
	}
	p, err := DecodeProof(j.OwnerProof)
	switch {
	case err != nil:
	case p.Owner() != j.Owner:
		err = &ProofError{Rule: RuleProofKey, Detail: "signed by " + short(p.Owner()) + ", the offer names " + short(j.Owner)}
	case p.JobID() != j.ID:
		err = &ProofError{Rule: RuleProofJob, Detail: "the proof names job " + p.JobID()}
	default:
		if err = p.Check(from.ID, j.Spec); err != nil {
			err = &ProofError{Rule: RuleHandoverHome, Detail: "the owner proof is not for a launch on " + short(from.ID)}
		}
	}
	var pe *ProofError
	if errors.As(err, &pe) {
		return &RefusedError{Rule: pe.Rule, Detail: pe.Detail, Forbidden: true}
	}
	if PrivateDigest(j.Spec.PrivateSalt, j.Spec.Env, j.Spec.Cmd) != j.Spec.PrivateDigest {
		return &RefusedError{Rule: RuleHandoverPrivate, Detail: "they do not hash to the digest the owner signed", Forbidden: true}
	}
	return nil
}

// refusal is the answer of a refusal r.
func refusal(err error) OfferAnswer {
	var r *RefusedError
	if errors.As(err, &r) {
		return OfferAnswer{Rule: r.Rule, Detail: r.Detail}
	}
	var be *BusyError
	if errors.As(err, &be) {
		return OfferAnswer{Rule: RuleHandoverFit, Detail: be.Error()}
	}
	return OfferAnswer{Rule: RuleHandoverFit, Detail: err.Error()}
}

// AcceptOffer answers a job's home, from, offering it the job (see the
// rules above). An error is no answer: the home asks again (another offer
// of the job is being answered, or the answer could not be recorded).
func (m *Manager) AcceptOffer(ctx context.Context, from Caller, o Offer) (OfferAnswer, error) {
	if r := checkOffer(from, o); r != nil {
		m.log.Warn("refuse a job offered by its home", "job", o.Job.ID, "home", short(from.ID), "rule", r.Rule, "why", r.Detail)
		return refusal(r), nil
	}
	id := o.Job.ID
	done, err := m.claim(id)
	if err != nil {
		return OfferAnswer{}, err
	}
	defer done()
	if cur, err := m.Get(id); err == nil {
		if cur.Home == from.ID && cur.Fence == o.Fence {
			pub := cur.Public()
			return OfferAnswer{Accepted: true, Job: &pub}, nil
		}
		return OfferAnswer{Rule: RuleHandoverHere, Detail: fmt.Sprintf("job %s came here under fence %d; it never starts here twice", id, cur.Fence)}, nil
	}
	m.mu.Lock()
	last := m.refused[id]
	m.mu.Unlock()
	if o.Fence <= last {
		return OfferAnswer{Rule: RuleHandoverFence, Detail: fmt.Sprintf("fence %d of job %s, refused here under fence %d", o.Fence, id, last)}, nil
	}
	j, err := m.takeOver(ctx, from.ID, o)
	if err != nil {
		var r *RefusedError
		var be *BusyError
		if errors.As(err, &r) || errors.As(err, &be) || errors.Is(err, ErrNoRuntime) {
			m.rememberRefusal(id, o.Fence)
			m.log.Info("refuse a job offered by its home", "job", id, "home", short(from.ID), "fence", o.Fence, "why", err)
			return refusal(err), nil
		}
		return OfferAnswer{}, err
	}
	pub := j.Public()
	return OfferAnswer{Accepted: true, Job: &pub}, nil
}

// maxRefusals bounds the fences AcceptOffer remembers it refused.
const maxRefusals = 4096

func (m *Manager) rememberRefusal(id string, fence uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.refused[id]; !ok && len(m.refused) >= maxRefusals {
		for k := range m.refused { // any one: a job refused long ago
			delete(m.refused, k)
			break
		}
	}
	m.refused[id] = max(m.refused[id], fence)
}

// takeOver records job o.Job here under o.Fence, then launches it, as a
// launch of its owner's that never queues here. A launch that fails leaves
// the job failed here, with the reason: it was handed over.
func (m *Manager) takeOver(ctx context.Context, home string, o Offer) (Job, error) {
	if m.ex == nil {
		return Job{}, ErrNoRuntime
	}
	m.ops.RLock()
	defer m.ops.RUnlock()
	spec := o.Job.Spec
	caps := m.ex.Capabilities()
	gpus := m.gpus.GPUs()
	v, _ := m.ex.(Validator)
	if err := Validate(spec, caps, v, len(gpus)); err != nil {
		return Job{}, err
	}
	owner := Caller{ID: o.Job.Owner}
	if m.cfg.Role != nil {
		owner.Role = m.cfg.Role(owner.ID)
	}
	if err := m.mayLaunch(owner); err != nil {
		return Job{}, err
	}
	if err := m.resourcePolicy(owner, &spec); err != nil {
		return Job{}, err
	}
	mounts, err := m.mounts(spec, owner.ID)
	if err != nil {
		return Job{}, err
	}
	if _, _, err := m.runAs(spec, mounts, caps); err != nil {
		return Job{}, err
	}
	j := newJob(m.cfg.Node, owner.ID, o.Job.ID, spec)
	j.Executor, j.OwnerProof, j.Home, j.Fence = caps.Name, o.Job.OwnerProof, home, o.Fence
	if !o.Job.Created.IsZero() && o.Job.Created.Before(j.Created) {
		j.Created = o.Job.Created // it waited since then
	}
	if !caps.Schedules {
		external := m.external(gpus)
		m.keepStarving(gpus, external) // a job starving here keeps its GPUs from a job handed over
		uuids, err := m.ledger.Grant(j.ID, j.request(), gpus, external)
		if err != nil {
			return Job{}, m.explainBusy(err)
		}
		j.GPUs, j.GPUIndexes = uuids, m.ledger.Indexes(uuids, gpus)
		j.GPUShare, j.GPUMemBytes = m.ledger.share(j.ID)
		j.ShareMode = shareMode(spec, caps)
	}
	if err := m.store.SavePrivate(j.ID, Private{Env: spec.Env, Cmd: spec.Cmd, Salt: spec.PrivateSalt}); err != nil {
		m.ledger.Release(j.ID)
		return Job{}, fmt.Errorf("keep the environment and command line of job %s: %w", j.ID, err)
	}
	if err := m.insertDurable(j); err != nil {
		m.ledger.Release(j.ID)
		return Job{}, err
	}
	m.log.Info("job handed over", "job", j.ID, "home", short(home), "fence", o.Fence, "owner", owner.ID)
	t, err := m.launch(ctx, j, mounts)
	if err != nil {
		m.ledger.Release(j.ID)
		now := time.Now().UTC()
		return m.update(j.ID, func(cur *Job) error {
			cur.State, cur.Finished, cur.Error = Failed, &now, err.Error()
			return nil
		})
	}
	_, err = m.update(j.ID, func(cur *Job) error {
		if cur.State != Starting {
			return ErrConflict // stopped while it launched
		}
		if caps.Schedules {
			cur.Container = t.Handle
			apply(cur, t, true)
			return nil
		}
		setRunning(cur, t)
		m.served[m.person(cur.Owner)] = *cur.Started
		return nil
	})
	if err != nil {
		m.discard(ctx, t.Handle)
		m.ledger.Release(j.ID)
		return m.Get(j.ID) // it is here, stopped: the answer stands
	}
	return m.afterStart(ctx, j.ID)
}

// insertDurable adds a new record and returns once the store keeps it.
func (m *Manager) insertDurable(j Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	if err := m.store.SaveJob(j.Public()); err != nil {
		return fmt.Errorf("record job %s: %w", j.ID, err)
	}
	m.setLocked(j)
	return nil
}

// updateDurable is update, returning only once the store keeps the change
// (an offer is recorded before it is sent); a change the store refuses is
// not made.
func (m *Manager) updateDurable(id string, fn func(*Job) error) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	j := *cur
	if err := fn(&j); err != nil {
		return Job{}, err
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	if err := m.store.SaveJob(j.Public()); err != nil {
		return Job{}, fmt.Errorf("record the hand-over of job %s: %w", id, err)
	}
	m.setLocked(j)
	return j, nil
}

// handOver offers the jobs queued here pool-wide that wait to the machines
// that fit them, and asks again where an offer is outstanding; it says in
// each one's Error where it waits and why.
func (m *Manager) handOver(ctx context.Context) {
	if m.cfg.Offer == nil || m.cfg.Targets == nil {
		return
	}
	m.forgetUnqueued()
	taken := map[string]bool{} // machines offered a job in this pass: the replica has not seen it yet
	for _, j := range m.queued() {
		if ctx.Err() != nil {
			return
		}
		switch {
		case !j.Spec.Anywhere:
		case j.OfferedTo != "":
			taken[j.OfferedTo] = true
			m.resolve(ctx, j)
		default:
			m.place(ctx, j, taken)
		}
	}
}

// forgetUnqueued drops what the hand-over keeps of jobs no longer queued
// here (started, moved, stopped): its memory is that of the queue.
func (m *Manager) forgetUnqueued() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.waitWhy {
		if !m.queue[id] {
			delete(m.waitWhy, id)
		}
	}
	for id := range m.refusedAt {
		if !m.queue[id] {
			delete(m.refusedAt, id)
		}
	}
}

// place offers j to the first machine that fits it, or says why none does.
func (m *Manager) place(ctx context.Context, j Job, taken map[string]bool) {
	ts := m.cfg.Targets(j.Spec)
	now := time.Now()
	for _, t := range ts {
		if !t.Fits || taken[t.Node] || t.Node == m.cfg.Node || m.refusedBy(j.ID, t.Node, now) {
			continue
		}
		taken[t.Node] = true
		o, err := m.updateDurable(j.ID, func(cur *Job) error {
			if cur.State != Queued || cur.OfferedTo != "" {
				return ErrConflict // started here, stopped or offered meanwhile
			}
			cur.Fence = max(cur.Fence, 1)
			cur.OfferedTo = t.Node
			return nil
		})
		if err != nil {
			if !errors.Is(err, ErrConflict) {
				m.log.Error("record an offer: not offering", "job", j.ID, "to", short(t.Node), "err", err)
			}
			return
		}
		m.resolve(ctx, o)
		return
	}
	m.sayWhy(j, ts)
}

// resolve sends j's outstanding offer (again) and records the answer.
func (m *Manager) resolve(ctx context.Context, j Job) {
	m.mu.Lock()
	cur := m.jobs[j.ID]
	var full Job // with its environment, command line and salt
	if cur != nil {
		full = *cur
	}
	m.mu.Unlock()
	to, fence := j.OfferedTo, j.Fence
	if cur == nil || full.OfferedTo != to || full.Fence != fence {
		return
	}
	ans, err := m.cfg.Offer(ctx, to, Offer{Job: full, Fence: fence})
	if err != nil {
		m.log.Debug("no answer to an offer: asking again later", "job", j.ID, "to", short(to), "fence", fence, "err", err)
		return
	}
	moved := ans.Accepted || ans.Rule == RuleHandoverHere
	_, err = m.updateDurable(j.ID, func(cur *Job) error {
		if cur.OfferedTo != to || cur.Fence != fence {
			return ErrConflict
		}
		cur.OfferedTo = ""
		if moved {
			now := time.Now().UTC()
			cur.State, cur.MovedTo, cur.Finished, cur.Error = Moved, to, &now, "moved to "+m.nodeName(to)
			return nil
		}
		cur.Fence++
		return nil
	})
	if err != nil {
		m.log.Warn("record the answer to an offer: asking again later", "job", j.ID, "to", short(to), "err", err)
		return
	}
	if moved {
		m.store.SavePrivate(j.ID, Private{}) // it runs there now
		m.log.Info("queued job handed over", "job", j.ID, "to", short(to), "fence", fence)
		return
	}
	backoff := m.cfg.RefuseBackoff
	if ans.Rule == RuleHandoverFit {
		// X's GPUs were not free yet: the stop that freed them in the
		// replica may reach X's ledger a moment later.
		backoff = min(backoff, fitBackoff)
	}
	m.mu.Lock()
	if m.refusedAt[j.ID] == nil {
		m.refusedAt[j.ID] = map[string]time.Time{}
	}
	m.refusedAt[j.ID][to] = time.Now().Add(backoff)
	m.mu.Unlock()
	m.log.Info("offer of a queued job refused: back in the queue", "job", j.ID, "to", short(to), "rule", ans.Rule, "why", ans.Detail)
}

// fitBackoff is how long a machine that refused a job because it did not
// fit there then is not offered it again (other refusals:
// Config.RefuseBackoff).
const fitBackoff = 2 * time.Second

// refusedBy says whether node refused job lately: refusedAt keeps until
// when.
func (m *Manager) refusedBy(job, node string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.refusedAt[job][node]
	return ok && now.Before(until)
}

// nodeName names a machine for a person.
func (m *Manager) nodeName(id string) string {
	if m.cfg.MemberName != nil {
		if n := m.cfg.MemberName(id); n != "" {
			return n
		}
	}
	return short(id)
}

// sayWhy records in j's Error, in one sentence, where it waits and why: what
// holds this machine's GPUs, and what each other machine lacks.
func (m *Manager) sayWhy(j Job, ts []Target) {
	m.mu.Lock()
	here := m.waitWhy[j.ID]
	m.mu.Unlock()
	if here == "" {
		here = strings.TrimPrefix(j.Error, "waiting for GPUs: ")
	}
	why := WaitSentence(m.nodeName(m.cfg.Node), j.request().want(), here, ts)
	if why == j.Error {
		return
	}
	m.update(j.ID, func(cur *Job) error {
		if cur.State != Queued || cur.OfferedTo != "" {
			return ErrConflict
		}
		cur.Error = why
		return nil
	})
}

// WaitSentence says in one sentence where a queued job waits and why: "waits
// on dgx-h100 for 2 GPUs: GPUs 0, 1, 2, 3: job train of alice; no other
// machine fits: ws-a100 has 1 of 4 GPUs free".
func WaitSentence(home string, want int, here string, others []Target) string {
	s := fmt.Sprintf("waits on %s for %d GPU%s", home, want, plural(want))
	if here != "" {
		s += ": " + here
	}
	var why []string
	for _, t := range others {
		if !t.Fits && t.Why != "" {
			why = append(why, t.Name+" "+t.Why)
		}
	}
	slices.Sort(why)
	switch {
	case len(others) == 0:
		s += "; no other machine in the pool"
	case len(why) > 0:
		s += "; no other machine fits: " + strings.Join(why, ", ")
	default:
		s += "; being offered to another machine"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
