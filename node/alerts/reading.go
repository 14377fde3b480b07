package alerts

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
)

// Reading is what one evaluation looks at: one sample of this machine with
// its grants and shared folders, and the liveness of the pool's machines.
type Reading struct {
	Time       time.Time
	GPUs       []GPUReading
	Folders    []FolderReading
	CPUPercent float64
	MemPercent float64
	// Peers are the machines of the pool this one watches, for
	// MetricOffline: empty on a machine that observes none (one in no
	// pool, or removed from it). An alert about a machine no longer
	// listed clears at once.
	Peers []PeerReading
}

// GPUReading is one GPU of a sample.
type GPUReading struct {
	Index          int
	UUID           string
	TempC          float64
	UtilPercent    float64
	MemUsedPercent float64
	PowerW         float64
	Health         string   // "ok" | "warning" | "quarantined" | "lost"; "" = unknown (ok)
	HealthReason   string   // why, when not ok
	Throttle       []string // active throttle reasons, e.g. "hw_thermal_slowdown"
	Job            string   // the job the ledger granted it to, "" when free
	JobName        string   // that job's name and its owner's, for messages ("" when unknown)
	OwnerName      string
	// Holder is who holds the GPU by a scheduler's word ("slurm job 123"),
	// with Job when labpool launched it, alone when not (the sample's
	// holding: alloc.Holder.Scheduler).
	Holder string
}

// FolderReading is the disk of one shared folder.
type FolderReading struct {
	Name        string
	UsedPercent float64
}

// PeerReading is one other machine of the pool, as this one sees it.
type PeerReading struct {
	Node    string // device ID
	Name    string
	Offline bool // no live session now
}

// Folder is one shared folder of this machine.
type Folder struct {
	Name, Path string
}

// Inputs give the evaluator what a sample does not hold; each call must
// return quickly (the daemon answers from memory).
type Inputs interface {
	Grants() map[string]string // GPU UUID -> job ID
	Folders() []Folder
	Peers() []PeerReading
}

// JobNames is what Inputs may also offer: a job's name and its owner's
// name, by job ID, for alert messages people read (answered from memory).
type JobNames interface {
	JobNames(job string) (name, owner string)
}

// withNames fills in the names of the jobs holding rd's GPUs.
func withNames(rd *Reading, names JobNames) {
	for i := range rd.GPUs {
		if g := &rd.GPUs[i]; g.Job != "" {
			g.JobName, g.OwnerName = names.JobNames(g.Job)
		}
	}
}

// healthLevel is MetricHealth's value of a GPU's health.
func healthLevel(h string) float64 {
	switch h {
	case "warning":
		return 1
	case "quarantined":
		return 2
	case "lost":
		return 3
	}
	return 0
}

// ReadingOf builds the Reading of sample s with this machine's grants and
// shared folders.
func ReadingOf(s agent.Sample, grants map[string]string, folders []Folder) Reading {
	r := Reading{Time: s.Time, CPUPercent: s.Host.CPUPercent}
	if s.Host.MemTotalBytes > 0 {
		r.MemPercent = 100 * float64(s.Host.MemUsedBytes) / float64(s.Host.MemTotalBytes)
	}
	for _, g := range s.GPUs {
		gr := GPUReading{Index: g.Index, UUID: g.UUID, TempC: g.TempC, UtilPercent: g.UtilPercent, PowerW: g.PowerW,
			Health: g.Health, HealthReason: g.HealthReason, Throttle: g.Throttle, Job: grants[g.UUID]}
		h := s.Holding.GPU(g.UUID)
		gr.Holder = h.Scheduler()
		if gr.Job == "" {
			gr.Job = h.JobID()
		}
		if g.MemTotalBytes > 0 {
			gr.MemUsedPercent = 100 * float64(g.MemUsedBytes) / float64(g.MemTotalBytes)
		}
		r.GPUs = append(r.GPUs, gr)
	}
	for _, f := range folders {
		if d, ok := diskOf(s.Host.Disks, f.Path); ok && d.TotalBytes > 0 {
			r.Folders = append(r.Folders, FolderReading{Name: f.Name, UsedPercent: 100 * float64(d.UsedBytes) / float64(d.TotalBytes)})
		}
	}
	return r
}

// diskOf is the disk holding path: the one mounted deepest above it.
func diskOf(disks []host.Disk, path string) (host.Disk, bool) {
	path = filepath.Clean(path)
	best, found := host.Disk{}, false
	for _, d := range disks {
		m := filepath.Clean(d.Mount)
		under := path == m || m == "/" || strings.HasPrefix(path, m+"/")
		if under && (!found || len(m) > len(filepath.Clean(best.Mount))) {
			best, found = d, true
		}
	}
	return best, found
}

// throttling counts the throttle reasons of g that are slowdowns, as the
// GPU's health counts them (gpu.ThrottleWarns): a GPU at its power limit
// under full load (sw_power_cap) is not throttled.
func throttling(g GPUReading) (n float64, which []string) {
	for _, t := range g.Throttle {
		if gpu.ThrottleWarns(t) {
			n++
			which = append(which, t)
		}
	}
	return n, which
}
