package slurm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// lostReason is the Reason of a job that Slurm forgot before labpool saw
// it end (see record).
const lostReason = "Slurm forgot the job before labpool saw it end: its exit is unknown"

// ours says whether j is labpool's: submitted by this executor (a
// record in its state directory, which no job reaches) and run by the
// account it was submitted as. A job's comment proves nothing: any job
// of a job account may write one (rule "a Slurm job is labpool's by the
// agent's record, never by its comment").
func (e *Executor) ours(j Job) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.oursLocked(j, e.recs[j.ID])
}

// oursLocked is ours, with r the record of j (nil: none) and e.mu held.
func (e *Executor) oursLocked(j Job, r *record) bool {
	if r == nil || r.Removed {
		return false
	}
	return j.User == "" || j.User == e.userOf(r)
}

// fromJob is the status of j, from its record rec.
func (e *Executor) fromJob(ctx context.Context, j Job, rec *record) jobs.TaskStatus {
	state, code, oom := taskState(j)
	st := jobs.TaskStatus{
		Handle: j.ID, JobID: j.LabpoolJob, State: state, Reason: reason(j, state),
		ExitCode: code, OOM: oom, Started: j.Started, Finished: j.Ended, Hosts: j.Nodes,
	}
	if rec != nil {
		st.JobID, st.Labels, st.Ports = rec.JobID, rec.Labels, identity(rec.Ports)
	}
	if state == jobs.TaskRunning && len(j.Nodes) > 0 {
		st.Addr = e.nodeAddr(ctx, j.Nodes[0])
	}
	return st
}

// seen records st as the last status of its job, and keeps it on disk
// once it is the job's end. A job without a record is not labpool's
// (see ours): nothing is adopted from a comment.
func (e *Executor) seen(st jobs.TaskStatus) {
	e.mu.Lock()
	r := e.recs[st.Handle]
	if r == nil || r.Final || r.Removed {
		e.mu.Unlock() // not ours, or its end is kept already
		return
	}
	save := false
	r.Last = st
	if st.State.Ended() {
		r.Final, save = true, true
	}
	if save {
		e.recGen++
	}
	if !save {
		e.mu.Unlock()
		return
	}
	cp := *r
	e.mu.Unlock()
	if err := e.save(&cp); err != nil {
		e.log.Warn("slurm: keep a job's record", "job", st.JobID, "handle", st.Handle, "err", err)
	}
}

// record is handle's record, or nil; its Last, Final and Removed change
// under e.mu (read them through removed), the rest is set once.
func (e *Executor) record(handle string) *record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.recs[handle]
}

// removed says whether handle was removed (a tombstone).
func (e *Executor) removed(handle string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.recs[handle]
	return r != nil && r.Removed
}

// Inspect reads one task from the shared snapshot; a job that left it is
// asked of scontrol, then of the record.
func (e *Executor) Inspect(ctx context.Context, handle string) (jobs.TaskStatus, error) {
	if !validHandle(handle) {
		return jobs.TaskStatus{}, errHandle(handle)
	}
	snap, err := e.q.get(ctx, false)
	if err != nil {
		return jobs.TaskStatus{}, fmt.Errorf("inspect slurm job %s: %w", handle, err)
	}
	if e.removed(handle) {
		return jobs.TaskStatus{}, fmt.Errorf("slurm job %s: removed: %w", handle, jobs.ErrTaskGone)
	}
	rec := e.record(handle)
	if j, ok := snap.Jobs[handle]; ok && e.ours(j) {
		st := e.fromJob(ctx, j, rec)
		e.seen(st)
		return st, nil
	}
	if rec == nil {
		return jobs.TaskStatus{}, fmt.Errorf("slurm job %s: not labpool's, or unknown: %w", handle, jobs.ErrTaskGone)
	}
	return e.vanished(ctx, []*record{rec})[0], nil
}

// maxAsk bounds the scontrol calls of one tick for jobs that left squeue.
const maxAsk = 20

// vanished reads jobs that have records but left squeue: their kept end,
// else what scontrol still knows, else lost. scontrol is asked one job at
// a time (a listing of every job would carry other users' names, which
// may forge lines), for at most maxAsk jobs a tick; a job scontrol could
// not be asked about keeps its last status until a later tick.
func (e *Executor) vanished(ctx context.Context, recs []*record) []jobs.TaskStatus {
	out := make([]jobs.TaskStatus, len(recs))
	asked := 0
	for i, r := range recs {
		e.mu.Lock()
		last, final := r.Last, r.Final
		e.mu.Unlock()
		out[i] = last
		if final || asked >= maxAsk {
			continue
		}
		asked++
		b, err := e.run.Run(ctx, "scontrol", "show", "job", "-o", r.Handle)
		forgotten := err != nil && strings.Contains(err.Error(), "Invalid job id")
		if err != nil && !forgotten {
			continue // scontrol did not answer: ask again next tick
		}
		var j *Job
		for _, k := range ParseScontrolJobs(b) {
			if k.ID == r.Handle && (k.User == "" || k.User == e.userOf(r)) {
				j = &k
			}
		}
		if j != nil {
			out[i] = e.fromJob(ctx, *j, r)
		} else {
			out[i].State, out[i].Reason, out[i].ExitCode, out[i].Addr = jobs.TaskFailed, lostReason, -1, ""
		}
		e.seen(out[i])
	}
	return out
}

// List returns every labpool job Slurm or the records know, from one
// squeue.
func (e *Executor) List(ctx context.Context) ([]jobs.TaskStatus, error) {
	snap, err := e.q.get(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("list slurm jobs: %w", err)
	}
	return e.listFrom(ctx, snap), nil
}

func (e *Executor) listFrom(ctx context.Context, snap *snapshot) []jobs.TaskStatus {
	out, _ := e.list(ctx, snap)
	return out
}

// list is listFrom, and whether every job it lists that left squeue has
// its end known (settled: a later list of the same snapshot and records
// is the same).
func (e *Executor) list(ctx context.Context, snap *snapshot) (out []jobs.TaskStatus, settled bool) {
	type mine struct {
		j   Job
		rec *record
	}
	var found []mine
	var gone []*record
	settled = true
	e.mu.Lock() // one lock for the whole tick, not one per job
	for id, j := range snap.Jobs {
		if r := e.recs[id]; e.oursLocked(j, r) {
			found = append(found, mine{j, r})
		}
	}
	var purge []*record
	for h, r := range e.recs {
		if _, ok := snap.Jobs[h]; !ok {
			if r.Removed {
				purge = append(purge, r) // Slurm forgot a removed job: drop its tombstone
				delete(e.recs, h)
				e.recGen++
			} else {
				gone = append(gone, r)
				settled = settled && r.Final
			}
		}
	}
	e.mu.Unlock()
	for _, r := range purge {
		if err := e.forget(ctx, r, true); err != nil {
			e.log.Warn("slurm: drop a removed job's record", "handle", r.Handle, "err", err)
		}
	}
	out = make([]jobs.TaskStatus, 0, len(found)+len(gone))
	for i := range found {
		m := &found[i]
		st := e.fromJob(ctx, m.j, m.rec)
		e.seen(st)
		out = append(out, st)
	}
	out = append(out, e.vanished(ctx, gone)...)
	sort.Slice(out, func(i, k int) bool { return handleLess(out[i].Handle, out[k].Handle) })
	return out, settled
}

// handleLess orders Slurm job IDs by number.
func handleLess(a, b string) bool {
	if len(a) != len(b) && !strings.Contains(a+b, "_") {
		return len(a) < len(b)
	}
	return a < b
}

// nodeAddr is the NodeAddr of a node, from the cache that ReadCluster
// fills; an unknown node is asked of scontrol, once per tick at most. A
// name is resolved to its IPv4 address, so that a tunnel dials the
// address HoldsPort checked.
func (e *Executor) nodeAddr(ctx context.Context, node string) string {
	e.addrMu.Lock()
	defer e.addrMu.Unlock()
	if a, ok := e.addrs[node]; ok {
		return a
	}
	if now := e.cfg.Now(); now.Sub(e.addrsAt) >= e.cfg.Tick {
		e.addrsAt = now
		if b, err := e.run.Run(ctx, "scontrol", "show", "node", "-o"); err == nil {
			for n, a := range ParseNodeAddrs(b) {
				e.addrs[n] = a
			}
		}
	}
	a := e.addrs[node]
	if a == "" {
		a = node
	}
	if _, err := netip.ParseAddr(a); err != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", a); err == nil && len(ips) > 0 {
			a = ips[0].Unmap().String()
		}
		e.addrs[node] = a // resolved or not: once until the next ReadCluster
	}
	return a
}
