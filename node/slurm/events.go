package slurm

import (
	"context"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// Events reads the queue once per tick and sends an event for each
// labpool job whose state, reason or exit changed, appeared or left.
// While no labpool job is pending or running it reads every IdleTick
// instead (squeue's own cost is most of a tick's); Start wakes it.
func (e *Executor) Events(ctx context.Context) (<-chan jobs.TaskEvent, <-chan error) {
	ch := make(chan jobs.TaskEvent, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		defer close(ch)
		var w watch
		for {
			wait := e.cfg.Tick
			snap, err := e.q.get(ctx, false)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				e.log.Warn("slurm: read the queue", "err", err)
			} else {
				if evs := e.step(ctx, &w, snap); !e.send(ctx, ch, evs) {
					return
				}
				if !w.active {
					wait = e.cfg.IdleTick
				}
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			case <-e.wake:
				timer.Stop()
			}
		}
	}()
	return ch, errc
}

// watch is what the event loop keeps between ticks.
type watch struct {
	last    map[string]taskKey // nil before the first tick
	gen     uint64             // the Gen of the snapshot last listed
	recGen  uint64             // the records' generation when it was
	settled bool               // no job in last had left squeue with its end unknown
	active  bool               // a job in last was pending or running
}

// step lists snap's labpool jobs and returns an event for each change
// since the last step (none at the first). A snapshot and records the
// same as the last step's, with every job's end known, change nothing:
// step skips the list (the tick of a queue that did not change costs
// no work per job).
func (e *Executor) step(ctx context.Context, w *watch, snap *snapshot) []jobs.TaskEvent {
	e.mu.Lock()
	recGen := e.recGen
	e.mu.Unlock()
	if w.last != nil && w.settled && snap.Gen == w.gen && recGen == w.recGen {
		return nil
	}
	now, settled := e.list(ctx, snap)
	var evs []jobs.TaskEvent
	if w.last != nil {
		evs = diff(w.last, now, e.cfg.Now())
	}
	w.last, w.gen, w.recGen, w.settled, w.active = keys(now), snap.Gen, recGen, settled, active(now)
	return evs
}

// active says whether a job in list is pending or running.
func active(list []jobs.TaskStatus) bool {
	for _, st := range list {
		if !st.State.Ended() {
			return true
		}
	}
	return false
}

// poke wakes the event loops after a change made here (a submission).
func (e *Executor) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// taskKey is what an event reports a change of.
type taskKey struct {
	JobID    string
	State    jobs.TaskState
	Reason   string
	ExitCode int
	Hosts    int
}

func keys(list []jobs.TaskStatus) map[string]taskKey {
	m := make(map[string]taskKey, len(list))
	for _, st := range list {
		m[st.Handle] = taskKey{st.JobID, st.State, st.Reason, st.ExitCode, len(st.Hosts)}
	}
	return m
}

// diff is one event per job whose key changed between two ticks.
func diff(prev map[string]taskKey, now []jobs.TaskStatus, at time.Time) []jobs.TaskEvent {
	var evs []jobs.TaskEvent
	cur := keys(now)
	for _, st := range now {
		if k, ok := prev[st.Handle]; !ok || k != cur[st.Handle] {
			evs = append(evs, jobs.TaskEvent{Handle: st.Handle, JobID: st.JobID, Action: "state", Time: at})
		}
	}
	for h, k := range prev {
		if _, ok := cur[h]; !ok {
			evs = append(evs, jobs.TaskEvent{Handle: h, JobID: k.JobID, Action: "destroy", Time: at})
		}
	}
	return evs
}

func (e *Executor) send(ctx context.Context, ch chan<- jobs.TaskEvent, evs []jobs.TaskEvent) bool {
	for _, ev := range evs {
		select {
		case ch <- ev:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
