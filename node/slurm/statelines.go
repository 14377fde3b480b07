package slurm

import (
	"bytes"
	"context"
	"strings"
)

// The poll reads the queue in two steps. Each tick one squeue prints every
// job's state line: its ID, state and reason, and no free field, so that
// squeue prints little and skips its sort (BenchmarkPoll1000Real). A job
// whose state and reason are those of the last read keeps the fields read
// then, with nothing parsed or allocated; a job whose reason alone changed
// takes the new reason; the jobs that are new or changed state are read in
// full by a second squeue that names them (--jobs). A scope read for the
// first time, or where most jobs changed, is read in full at once.
//
// What waits: a change of a job's other fields that leaves its state and
// reason alone (scontrol update of a pending job's name, comment,
// partition or time limit) shows at the job's next change of state.

// squeueStateArgs are squeue's arguments for the state lines: no field
// that a job's owner writes, and each line ended by the comment's marker,
// as the full records are.
func squeueStateArgs(m textMarkers) []string {
	return []string{"--noheader", "--states=all", "--Format=JobID:|,State:|,Reason:" + m.Comment, "--sort="}
}

// stateLine is one job's state line; its fields point into squeue's output.
type stateLine struct{ id, state, reason []byte }

// parseStateLines appends the state lines of out, made with markers m, to
// dst. A line that is not a job's (an ID that is not digits, a state that
// is not capitals) is skipped. Slurm's "None" reason reads as none, as in
// Job.Reason.
func parseStateLines(dst []stateLine, out []byte, m textMarkers) []stateLine {
	end := []byte(m.Comment + "\n")
	for len(out) > 0 {
		i := bytes.Index(out, end)
		if i < 0 {
			break
		}
		rec := out[:i]
		out = out[i+len(end):]
		a := bytes.IndexByte(rec, '|')
		if a < 0 {
			continue
		}
		b := bytes.IndexByte(rec[a+1:], '|')
		if b < 0 {
			continue
		}
		l := stateLine{id: rec[:a], state: rec[a+1 : a+1+b], reason: rec[a+2+b:]}
		if !validHandle(string(l.id)) || !isState(string(l.state)) {
			continue
		}
		if string(l.reason) == "None" {
			l.reason = nil
		}
		dst = append(dst, l)
	}
	return dst
}

// lineCache is what the last read of one scope said of its jobs.
type lineCache struct {
	jobs map[string]Job // the Jobs of its last snapshot (shared: never written)
	gen  uint64         // that snapshot's Gen
}

// readText reads the scope's jobs (the user's, or everyone's when full)
// from their state lines and, for the jobs whose line changed, their full
// records. A read that changes nothing returns the last Jobs and Gen.
func (q *queue) readText(ctx context.Context, full bool) (map[string]Job, uint64, error) {
	c := &q.known[0]
	if full {
		c = &q.known[1]
	}
	if c.jobs == nil {
		return q.readAll(ctx, full, c)
	}
	m := newMarkers()
	out, err := q.run.Run(ctx, "squeue", q.scoped(squeueStateArgs(m), full)...)
	if err != nil {
		return nil, 0, err
	}
	q.lines = parseStateLines(q.lines[:0], out, m)

	// A state line holds no text a job's owner writes, so no line is
	// forged and squeue prints each job once: known lines are as many as
	// the jobs read before unless some left.
	var need []string // new, or changed state
	known := 0        // lines of jobs read before
	changed := false
	for _, l := range q.lines {
		j, ok := c.jobs[string(l.id)]
		if ok {
			known++
		}
		switch {
		case !ok || j.State != string(l.state):
			need = append(need, string(l.id))
		case j.Reason != string(l.reason):
			changed = true
		}
	}
	changed = changed || known != len(c.jobs)

	if len(need) == 0 && !changed {
		return c.jobs, c.gen, nil
	}
	if 2*len(need) > len(q.lines) {
		return q.readAll(ctx, full, c)
	}
	var got map[string]Job
	if len(need) > 0 {
		list, err := q.readFull(ctx, full, need)
		if err != nil {
			return nil, 0, err
		}
		got = make(map[string]Job, len(list))
		for _, j := range list {
			got[j.ID] = j
		}
	}
	jobs := make(map[string]Job, len(q.lines))
	q.merge(jobs, c.jobs, got)
	q.gen++
	c.jobs, c.gen = jobs, q.gen
	return jobs, q.gen, nil
}

// merge puts into jobs each job of the state lines: its fields read
// before (old), with the line's reason, or its full record (got) when it
// is new or changed state.
func (q *queue) merge(jobs, old, got map[string]Job) {
	for _, l := range q.lines {
		j, ok := old[string(l.id)]
		switch {
		case !ok || j.State != string(l.state):
			if j, ok = got[string(l.id)]; !ok {
				continue // it left Slurm between the two reads
			}
		case j.Reason != string(l.reason):
			j.Reason = string(l.reason)
		}
		jobs[j.ID] = j
	}
}

// readAll reads every job of the scope in full.
func (q *queue) readAll(ctx context.Context, full bool, c *lineCache) (map[string]Job, uint64, error) {
	list, err := q.readFull(ctx, full, nil)
	if err != nil {
		return nil, 0, err
	}
	jobs := make(map[string]Job, len(list))
	for _, j := range list {
		jobs[j.ID] = j
	}
	q.gen++
	c.jobs, c.gen = jobs, q.gen
	return jobs, q.gen, nil
}

// readFull runs one squeue of full records: of the jobs ids, or of every
// job of the scope when ids is empty. A single job that Slurm no longer
// knows is no error: it is not listed.
func (q *queue) readFull(ctx context.Context, full bool, ids []string) ([]Job, error) {
	m := newMarkers()
	args := q.scoped(squeueTextArgs(m), full)
	if len(ids) > 0 {
		args = append(args, "--jobs="+strings.Join(ids, ","))
	}
	out, err := q.run.Run(ctx, "squeue", args...)
	if err != nil {
		if len(ids) == 1 && strings.Contains(err.Error(), "Invalid job id") {
			return nil, nil
		}
		return nil, err
	}
	return ParseSqueueText(out, m), nil
}

// scoped adds the job accounts' filter to args unless the read is full.
func (q *queue) scoped(args []string, full bool) []string {
	if !full {
		args = append(args, "--user="+q.users())
	}
	return args
}
