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
		last := map[string]taskKey{}
		first := true
		for {
			wait := e.cfg.Tick
			snap, err := e.q.get(ctx, false)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				e.log.Warn("slurm: read the queue", "err", err)
			} else {
				now := e.listFrom(ctx, snap)
				if !first && !e.send(ctx, ch, diff(last, now, e.cfg.Now())) {
					return
				}
				first = false
				last = keys(now)
				if !active(now) {
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
