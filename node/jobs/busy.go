package jobs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// BusyGPU is one GPU that could not be granted, and why.
type BusyGPU struct {
	Index int
	UUID  string
	Job   string // the job holding it, or the queued job it is kept for
	Owner string // that job's owner, when known
	// JobName and OwnerName are what a person reads for Job and Owner:
	// the job's name and the owner's member name, when known.
	JobName   string
	OwnerName string
	Reserved  bool   // kept for a queued job that waited too long (Job)
	External  bool   // used by a process outside labpool
	TooSmall  bool   // less memory than asked
	MemBytes  uint64 // its memory, when TooSmall: what GPUMemFor offers
	Unified   bool   // TooSmall, and MemBytes is the system's free memory
	// Quarantined and Lost: a GPU with a critical fault, or one NVML lost,
	// goes to no new job; Reason says which fault.
	Quarantined bool
	Lost        bool
	Reason      string
	// MIGOn: the GPU is partitioned; a job asks for one of its instances
	// by UUID, never the whole GPU.
	MIGOn bool
	// Why says, for people, any other reason alloc.Fit gave: a
	// reservation, the owner's own use, a GPU shared or its shares full.
	Why string
}

func (b BusyGPU) String() string {
	switch {
	case b.Quarantined:
		return fmt.Sprintf("GPU %d: quarantined: %s", b.Index, b.Reason)
	case b.Lost:
		return fmt.Sprintf("GPU %d: lost: %s", b.Index, b.Reason)
	case b.Reserved:
		return fmt.Sprintf("GPU %d: kept for queued job %s of %s, waiting the longest", b.Index, b.jobName(), b.ownerName())
	case b.MIGOn:
		return fmt.Sprintf("GPU %d: %s", b.Index, migOnWhy)
	case b.Why != "":
		return fmt.Sprintf("GPU %d: %s", b.Index, b.Why)
	case b.External:
		return fmt.Sprintf("GPU %d: a process outside labpool", b.Index)
	case b.TooSmall && b.Unified:
		return fmt.Sprintf("GPU %d: %d GiB free of unified memory, less than asked", b.Index, b.MemBytes>>30)
	case b.TooSmall:
		return fmt.Sprintf("GPU %d: %d MiB, less than asked", b.Index, b.MemBytes>>20)
	case b.Owner != "":
		return fmt.Sprintf("GPU %d: job %s of %s", b.Index, b.jobName(), b.ownerName())
	}
	return fmt.Sprintf("GPU %d: job %s", b.Index, b.jobName())
}

// jobName is the job's name, or its short ID.
func (b BusyGPU) jobName() string {
	if b.JobName != "" {
		return b.JobName
	}
	return shortID(b.Job, 8)
}

// ownerName is the owner's member name, or its short device ID.
func (b BusyGPU) ownerName() string {
	if b.OwnerName != "" {
		return b.OwnerName
	}
	return shortID(b.Owner, 9)
}

func shortID(id string, n int) string {
	if len(id) > n {
		return id[:n]
	}
	return id
}

// BusyError says which GPUs kept a request from being granted.
type BusyError struct {
	Want  int
	Free  int       // GPUs that matched and were free
	Total int       // GPUs on this machine
	Busy  []BusyGPU // the matching GPUs that were not free
}

func (e *BusyError) Error() string {
	if len(e.Busy) == 0 {
		return fmt.Sprintf("%s asked, this machine has %d", gpuCount(e.Want), e.Total)
	}
	// GPUs held for the same reason (one job's) are said once:
	// "GPUs 0, 1, 2, 3: job train of alice".
	var parts []string
	var idx []string
	for i, b := range e.Busy {
		idx = append(idx, strconv.Itoa(b.Index))
		why := strings.SplitN(b.String(), ": ", 2)[1]
		if i+1 < len(e.Busy) && strings.SplitN(e.Busy[i+1].String(), ": ", 2)[1] == why {
			continue
		}
		gpus := "GPU " + idx[0]
		if len(idx) > 1 {
			gpus = "GPUs " + strings.Join(idx, ", ")
		}
		parts, idx = append(parts, gpus+": "+why), nil
	}
	return fmt.Sprintf("%s asked, %d free: %s", gpuCount(e.Want), e.Free, strings.Join(parts, "; "))
}

// migOnWhy is why a GPU in MIG mode goes to no request for whole GPUs.
const migOnWhy = "MIG on (ask for its instances by profile or UUID: labpool gpus lists them)"

// busyError says why d, alloc.Fit's answer to a request of n units, does
// not fit: each unit passed over as a BusyGPU. stats are the GPUs' latest
// readings, by UUID. l.mu is held.
func (l *Ledger) busyError(d alloc.Decision, n, total int, stats map[string]gpu.Stats) *BusyError {
	e := &BusyError{Want: n, Free: d.Free, Total: total}
	for _, p := range d.Passed {
		e.Busy = append(e.Busy, l.busyOf(p, stats))
	}
	return e
}

// busyOf is one unit Fit passed over, as a BusyGPU. l.mu is held.
func (l *Ledger) busyOf(p alloc.Pass, stats map[string]gpu.Stats) BusyGPU {
	b := BusyGPU{Index: p.Unit.Index, UUID: p.Unit.ID}
	g := stats[p.Unit.ID]
	if p.Unit.Kind == alloc.MIG {
		g = stats[p.Unit.Parent]
	}
	q, quarantined := l.quarantined[g.UUID]
	switch {
	case p.Reason == alloc.Down && g.Health == gpu.HealthLost:
		b.Lost, b.Reason = true, g.HealthReason
	case p.Reason == alloc.Down && quarantined:
		b.Quarantined, b.Reason = true, q.Reason
	case p.Reason == alloc.Down:
		b.MIGOn = true
	case p.Reason == alloc.Held && p.By.Kind == alloc.Job:
		b.Job, b.Owner, b.JobName = p.By.ID, p.By.Member, p.By.Name
	case p.Reason == alloc.Kept:
		b.Reserved, b.Job, b.Owner, b.JobName = true, p.By.ID, p.By.Member, p.By.Name
	case p.Reason == alloc.Outside:
		b.External = true
	case p.Reason == alloc.TooSmall:
		b.TooSmall, b.MemBytes, b.Unified = true, uint64(p.Free), g.MemUnified
	default:
		b.Why = p.Why()
	}
	return b
}

// gpuCount is n GPUs in words: "1 GPU", "2 GPUs".
func gpuCount(n int) string { return fmt.Sprintf("%d GPU%s", n, plural(n)) }
