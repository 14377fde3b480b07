package alerting

import (
	"cmp"
	"sync"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/pool"
)

// jobNames remembers the names of the jobs holding GPUs, for alert messages
// people read (alerts.JobNames): a job's name and its owner's member name.
type jobNames struct {
	get func(id string) (jobs.Job, error) // *jobs.Manager.Get

	mu    sync.Mutex // guards known
	known map[string][2]string
}

// maxKnownJobs bounds the names remembered (GPUs held by distinct jobs).
const maxKnownJobs = 256

// SetJobs lets the evaluator name the jobs holding GPUs, and their owners,
// in alert messages; get is the job manager's Get. Call it before Run.
func (in *Inputs) SetJobs(get func(id string) (jobs.Job, error)) {
	in.names = &jobNames{get: get, known: map[string][2]string{}}
}

// JobNames implements alerts.JobNames: job's name and its owner's member
// name ("" each when unknown; the message then shows a short ID).
func (in *Inputs) JobNames(job string) (name, owner string) {
	n := in.names
	if n == nil {
		return "", ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if k, ok := n.known[job]; ok {
		return k[0], k[1]
	}
	j, err := n.get(job)
	if err != nil {
		return "", "" // not this machine's job (yet): asked again next time
	}
	owner = in.memberName(j.Owner)
	if len(n.known) >= maxKnownJobs {
		clear(n.known)
	}
	n.known[job] = [2]string{j.Name, owner}
	return j.Name, owner
}

// memberName names device id by its person (app's memberNames), marked
// app.RemovedMark once no device of theirs is left in the pool; "" when
// the pool never admitted it.
func (in *Inputs) memberName(id string) string {
	if in.pool == nil || id == "" {
		return ""
	}
	st, _ := in.pool.Snapshot()
	var dev *pool.MemberState
	for i := range st.Members {
		if st.Members[i].ID == id {
			dev = &st.Members[i]
		}
	}
	if dev == nil {
		return ""
	}
	person, name := cmp.Or(dev.Person, dev.ID), cmp.Or(dev.PersonName, dev.Name)
	for _, m := range st.Members {
		if cmp.Or(m.Person, m.ID) == person && !m.Removed {
			return name
		}
	}
	return name + app.RemovedMark
}

var _ alerts.JobNames = (*Inputs)(nil)
