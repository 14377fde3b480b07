package app

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/sync/schema"
)

// KindSlurmHold is a Slurm compute node's record of one Slurm job holding
// its GPUs (key: SlurmHold.Key; data: SlurmHold), written when the job is
// first seen on them, when what it holds changes and when it is gone: the
// grants the usage report counts of Slurm jobs, beside the node's samples
// (the cluster's agent, which launched the job, sees no GPU of it).
const KindSlurmHold = schema.KindSlurmHold

// SlurmHold is one Slurm job holding GPUs of the compute node that writes
// it, over one stretch.
type SlurmHold struct {
	Holder string     `json:"holder"`          // "slurm job 123" (alloc.Holder.Name)
	Job    string     `json:"job,omitempty"`   // labpool's job, when labpool launched it
	Owner  string     `json:"owner,omitempty"` // that job's owner (device ID)
	GPUs   []int      `json:"gpus"`            // the GPUs it held, by index
	Start  time.Time  `json:"start"`
	End    *time.Time `json:"end"` // nil while it holds them
}

// Key is the record's key: the holder and when it started.
func (h SlurmHold) Key() string { return fmt.Sprintf("%s@%d", h.Holder, h.Start.Unix()) }

// SlurmHolds follows the Slurm jobs holding a compute node's GPUs from one
// sample to the next (who holds them: slurm.Procs.Annotate) and says which
// records to write. The sampling loop owns it: it is not safe for
// concurrent use.
type SlurmHolds struct {
	open map[string]SlurmHold // holder -> its open record
}

// Adopt takes the records an earlier run of this machine's agent left
// open: the next Observe continues those still held and ends the others.
func (t *SlurmHolds) Adopt(hs []SlurmHold) {
	if t.open == nil {
		t.open = map[string]SlurmHold{}
	}
	for _, h := range hs {
		if h.End == nil && h.Holder != "" {
			t.open[h.Holder] = h
		}
	}
}

// Observe returns the records to write after sample gs taken at now, held
// as held says: a job first seen, one whose GPUs changed (the old stretch
// ends, a new one starts), one whose labpool job became known, one gone
// (ended at now).
func (t *SlurmHolds) Observe(now time.Time, gs []gpu.Stats, held alloc.Holding) []SlurmHold {
	if t.open == nil {
		t.open = map[string]SlurmHold{}
	}
	cur := holdsOf(gs, held)
	var out []SlurmHold
	for _, holder := range slices.Sorted(maps.Keys(t.open)) {
		h := t.open[holder]
		c, held := cur[holder]
		switch {
		case held && slices.Equal(c.GPUs, h.GPUs):
			if c.Job != h.Job || c.Owner != h.Owner {
				h.Job, h.Owner = c.Job, c.Owner
				t.open[holder] = h
				out = append(out, h)
			}
			delete(cur, holder)
		default: // gone, or holding other GPUs: this stretch ends
			end := now
			h.End = &end
			delete(t.open, holder)
			out = append(out, h)
		}
	}
	for _, holder := range slices.Sorted(maps.Keys(cur)) {
		h := cur[holder]
		h.Start = now
		t.open[holder] = h
		out = append(out, h)
	}
	return out
}

// holdsOf is what each Slurm job holds in one sample (who held what:
// held): its GPUs, sorted, and labpool's job and owner when known.
func holdsOf(gs []gpu.Stats, held alloc.Holding) map[string]SlurmHold {
	cur := map[string]SlurmHold{}
	for _, g := range gs {
		gh := held.GPU(g.UUID)
		holder := gh.Scheduler()
		if holder == "" {
			continue
		}
		h := cur[holder]
		h.Holder = holder
		h.GPUs = append(h.GPUs, g.Index)
		h.Job = cmpOr(h.Job, gh.JobID())
		for _, p := range g.Processes {
			if ph := held.Proc(p.PID); ph.Scheduler() == holder && ph.JobID() == h.Job {
				h.Owner = cmpOr(h.Owner, ph.Member)
			}
		}
		cur[holder] = h
	}
	for k, h := range cur {
		slices.Sort(h.GPUs)
		cur[k] = h
	}
	return cur
}
