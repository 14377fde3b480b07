package alerting

import (
	"sync"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/jobs"
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

// memberName is the member name of device id, marked app.RemovedMark
// when it was removed since; "" when the pool never admitted it.
func (in *Inputs) memberName(id string) string {
	if in.pool == nil || id == "" {
		return ""
	}
	st, _ := in.pool.Snapshot()
	for _, m := range st.Members {
		if m.ID == id && m.Removed {
			return m.Name + app.RemovedMark
		}
	}
	return st.MemberName(id)
}

var _ alerts.JobNames = (*Inputs)(nil)
