package app

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// The plan decides by alloc.Fit, the rule the machine's ledger grants by,
// on the machine's own view: the units and grants it publishes
// (KindGrants), or, from a machine that publishes none, a view read off
// its telemetry and the pool's active jobs.

// viewOf is n's units and grants: as n publishes them, or else as its
// latest sample and the active jobs of the pool say.
func viewOf(n Node, active []Job) ([]alloc.Unit, []alloc.Grant) {
	if n.Alloc != nil {
		return n.Alloc.Units, n.Alloc.Grants
	}
	var units []alloc.Unit
	held := map[string]bool{}
	var grants []alloc.Grant
	for _, j := range active {
		if j.Node != n.ID || (j.State != jobs.Running && j.State != jobs.Starting) || len(j.GPUs) == 0 {
			continue
		}
		grants = append(grants, alloc.Grant{Holder: alloc.Holder{Kind: alloc.Job, ID: j.ID, Member: j.Owner, Name: j.Name},
			Units: j.GPUs, Share: j.GPUShare, MemBytes: j.GPUMemBytes})
		for _, u := range j.GPUs {
			held[u] = true
		}
	}
	ext := alloc.Grant{Holder: alloc.Holder{Kind: alloc.External, ID: "outside labpool"}}
	for _, g := range n.GPUs {
		u := alloc.Unit{ID: g.UUID, Kind: alloc.GPU, Node: n.ID, Index: g.Index, Count: 1,
			MemBytes: jobs.GPUMemFor(g.MemTotalBytes, g.MemUsedBytes, g.MemUnified)}
		down := ""
		if g.Health == gpu.HealthQuarantined || g.Health == gpu.HealthLost {
			down = g.Health
			if g.HealthReason != "" {
				down += ": " + g.HealthReason
			}
		}
		u.Down = down
		if down == "" && g.MIG != nil && g.MIG.Enabled {
			u.Down = migOnWhy
		}
		units = append(units, u)
		if g.Processes > 0 && !held[g.UUID] && !migHeld(g, held) {
			ext.Units = append(ext.Units, g.UUID)
		}
		if g.MIG == nil || !g.MIG.Enabled {
			continue
		}
		for _, in := range g.MIG.Instances {
			units = append(units, alloc.Unit{ID: in.UUID, Kind: alloc.MIG, Node: n.ID, Index: g.Index, Parent: g.UUID,
				Profile: migProfile(in.Name), MemBytes: in.MemTotalBytes, Count: 1, Down: down})
		}
	}
	if len(ext.Units) > 0 {
		grants = append(grants, ext)
	}
	return units, grants
}

// migOnWhy is why a GPU in MIG mode goes to no request for whole GPUs
// (the words of the machine's ledger).
const migOnWhy = "MIG on (ask for its instances by profile or UUID: labpool gpus lists them)"

// migHeld reports whether a job holds an instance of g (its processes
// are then the job's).
func migHeld(g GPU, held map[string]bool) bool {
	if g.MIG == nil {
		return false
	}
	return slices.ContainsFunc(g.MIG.Instances, func(in gpu.MIGInstance) bool { return held[in.UUID] })
}

// migProfile is a MIG instance's profile from its name: "3g.40gb" of
// "NVIDIA A100-SXM4-80GB MIG 3g.40gb".
func migProfile(name string) string {
	_, p, ok := strings.Cut(name, "MIG ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(p)
}

// planRequest is spec as alloc.Fit reads it on n: the GPUs a count or
// indexes ask for, MIG instances by UUID or profile, or a share.
func planRequest(n Node, spec jobs.Spec, who string) alloc.Request {
	r := alloc.Request{Node: n.ID, Count: spec.GPUs, MemBytes: spec.MinGPUMemBytes,
		Holder: alloc.Holder{Kind: alloc.Job, ID: "planned", Member: who}}
	if spec.TimeLimitSeconds > 0 {
		r.Until = time.Time{}.Add(time.Duration(spec.TimeLimitSeconds) * time.Second) // set against at by fitNode
	}
	switch {
	case len(spec.MIGIDs) > 0:
		r.Units, r.Count = spec.MIGIDs, 0
	case spec.MIGProfile != "":
		r.Profile, r.Count = spec.MIGProfile, max(spec.GPUs, 1)
	case len(spec.GPUIDs) > 0:
		for _, i := range spec.GPUIDs {
			if k := slices.IndexFunc(n.GPUs, func(g GPU) bool { return g.Index == i }); k >= 0 {
				r.Units = append(r.Units, n.GPUs[k].UUID)
			}
		}
		r.Count = 0
	}
	if spec.GPUShare > 0 && spec.GPUShare < 1 {
		r.Share, r.MemBytes, r.Count = spec.GPUShare, spec.GPUMemBytes, max(spec.GPUs, 1)
	}
	return r
}

// fitNode is alloc.Fit's answer for r on n's view at at; for a count of
// whole GPUs, picked as the machine picks them (jobs.Place), and why
// those (the placement).
func fitNode(n Node, units []alloc.Unit, grants []alloc.Grant, r alloc.Request, at time.Time) (alloc.Decision, string) {
	var placement string
	if !r.Until.IsZero() {
		r.Until = at.Add(r.Until.Sub(time.Time{}))
	}
	if r.Share == 0 && r.Profile == "" {
		r.Pick = func(free []alloc.Unit, k int) []alloc.Unit {
			cands := make([]jobs.Candidate, 0, len(free))
			for _, u := range free {
				if i := slices.IndexFunc(n.GPUs, func(g GPU) bool { return g.UUID == u.ID }); i >= 0 {
					cands = append(cands, candidate(n.GPUs[i]))
				}
			}
			picked, why := jobs.Place(cands, k)
			placement = why
			out := make([]alloc.Unit, 0, len(picked))
			for _, c := range picked {
				out = append(out, free[slices.IndexFunc(free, func(u alloc.Unit) bool { return u.ID == c.UUID })])
			}
			return out
		}
	}
	return alloc.Fit(units, grants, r, at), placement
}

// planGPUs is the state of each of n's GPUs for spec, from alloc.Fit asked
// for every whole GPU at once (its passes say why each is kept), and the
// words for those kept ("GPU 2: job train of mike").
func planGPUs(n Node, units []alloc.Unit, grants []alloc.Grant, spec jobs.Spec, active []Job, at time.Time, who string) ([]PlanGPU, []string) {
	probe := planRequest(n, jobs.Spec{MinGPUMemBytes: spec.MinGPUMemBytes, GPUShare: spec.GPUShare, GPUMemBytes: spec.GPUMemBytes, TimeLimitSeconds: spec.TimeLimitSeconds}, who)
	probe.Count, probe.Profile = 0, ""
	for _, u := range units {
		if u.Kind == alloc.GPU {
			probe.Units = append(probe.Units, u.ID)
		}
	}
	d, _ := fitNode(n, units, grants, probe, at)
	passed := map[string]alloc.Pass{}
	for _, p := range d.Passed {
		passed[p.Unit.ID] = p
	}
	out := make([]PlanGPU, 0, len(n.GPUs))
	var busy []string
	for _, g := range n.GPUs {
		pg := PlanGPU{Index: g.Index, UUID: g.UUID, Name: g.Name, MemTotalBytes: g.MemTotalBytes, MemUsedBytes: g.MemUsedBytes,
			MemUnified: g.MemUnified, UtilPercent: g.UtilPercent, State: GPUFree}
		if p, ok := passed[g.UUID]; ok {
			if why := planPass(&pg, p, active); why != "" {
				busy = append(busy, fmt.Sprintf("GPU %d: %s", g.Index, why))
			}
		}
		pg.Status = planStatus(pg, spec)
		out = append(out, pg)
	}
	slices.SortStableFunc(out, func(a, b PlanGPU) int { return a.Index - b.Index })
	return out, busy
}

// planPass sets pg's state from the pass p alloc.Fit made of it, and says
// why it is kept ("" when merely small).
func planPass(pg *PlanGPU, p alloc.Pass, active []Job) string {
	switch {
	case p.Reason == alloc.Down && p.Unit.Down == migOnWhy:
		pg.State, pg.Reason = GPUBusy, migOnWhy // granted by instance, never whole
		return pg.Reason
	case p.Reason == alloc.Down:
		pg.State, pg.Reason = GPUFaulty, p.Unit.Down
		return pg.Reason
	case p.Reason == alloc.Held && p.By.Kind == alloc.Job:
		j := activeJob(active, p.By)
		pg.State, pg.Job, pg.JobName, pg.Owner, pg.OwnerName = GPUHeld, j.ID, j.Name, j.Owner, j.OwnerName
		return planWhy(p, active)
	case p.Reason == alloc.Kept:
		j := activeJob(active, p.By) // named as the pool knows the queued job and its owner
		if j.Name == "" {
			j.Name = shortID(j.ID)
		}
		pg.State, pg.Reason = GPUBusy, "kept for queued job "+j.Name+" of "+j.OwnerName+", waiting the longest"
		return pg.Reason
	case p.Reason == alloc.Outside:
		pg.State = GPUBusy
		return "a process outside labpool"
	case p.Reason == alloc.TooSmall && pg.State == GPUFree:
		pg.State = GPUSmall
		return ""
	}
	pg.State, pg.Reason = GPUBusy, p.Why() // shared, reserved, the owner's, kept
	if p.Reason == alloc.Reserved {
		pg.Owner = p.By.Member // who it is reserved for: the plan names them (nameReservers)
	}
	return pg.Reason
}

// activeJob is the active job holder names, or what holder says of it.
func activeJob(active []Job, h alloc.Holder) Job {
	if i := slices.IndexFunc(active, func(j Job) bool { return j.ID == h.ID }); i >= 0 {
		return active[i]
	}
	return Job{Job: jobs.Job{ID: h.ID, Name: h.Name, Owner: h.Member}, OwnerName: shortID(h.Member)}
}

// fitsUnits decides a request for MIG instances (by UUID or profile) or a
// share of a GPU, as alloc.Fit's answer d says, and says why.
func fitsUnits(spec jobs.Spec, r alloc.Request, d alloc.Decision, units []alloc.Unit, active []Job) (bool, string) {
	for _, u := range spec.MIGIDs {
		i := slices.IndexFunc(units, func(x alloc.Unit) bool { return x.ID == u && x.Kind == alloc.MIG })
		if i < 0 {
			return false, fmt.Sprintf("has no MIG instance %s", u)
		}
		if down := units[i].Down; down != "" {
			return false, fmt.Sprintf("refused by rule %q: MIG instance %s: gpu %d %s", "quarantined GPU", u, units[i].Index, down)
		}
	}
	if spec.MIGProfile != "" {
		have := 0
		for _, u := range units {
			if u.Kind == alloc.MIG && u.Profile == spec.MIGProfile {
				have++
			}
		}
		if have < r.Count {
			return false, fmt.Sprintf("refused by rule %q: %d MIG instances of profile %s asked: this machine has %d", "mig profile", r.Count, spec.MIGProfile, have)
		}
	}
	what := fmt.Sprintf("%d MIG instances", d.Want)
	if r.Share > 0 {
		what = fmt.Sprintf("a %.0f%% share of a GPU", 100*r.Share)
	}
	if d.Fits {
		if r.Share > 0 && len(d.Units) > 0 {
			return true, fmt.Sprintf("%s free on GPU %d", what, d.Units[0].Index)
		}
		return true, what + " free"
	}
	var busy []string
	for _, p := range d.Passed {
		name := fmt.Sprintf("GPU %d", p.Unit.Index)
		if p.Unit.Kind == alloc.MIG {
			name = p.Unit.ID
		}
		busy = append(busy, name+": "+planWhy(p, active))
	}
	reason := what + " busy: " + strings.Join(busy, "; ")
	if len(busy) == 0 {
		reason = what + ": none here"
	}
	if !spec.Queue {
		return false, reason
	}
	return true, reason + "; the job will wait in the queue"
}

// planWhy is p's reason as the plan says it: a job by its name and its
// owner's member name, where the pool has them.
func planWhy(p alloc.Pass, active []Job) string {
	if p.Reason == alloc.Held && p.By.Kind == alloc.Job {
		j := activeJob(active, p.By)
		return fmt.Sprintf("job %s of %s", j.Name, j.OwnerName)
	}
	return p.Why()
}

// planStatus is pg's line for people (PlanGPU.Status).
func planStatus(pg PlanGPU, spec jobs.Spec) string {
	switch pg.State {
	case GPUHeld:
		return pg.JobName + " · " + pg.OwnerName
	case GPUBusy:
		if pg.Reason == "" {
			return "in use outside labpool"
		}
		return pg.Reason
	case GPUFaulty:
		return pg.Reason
	case GPUSmall:
		return "under " + bytesText(spec.MinGPUMemBytes)
	}
	return "free"
}

// bytesText is n bytes in binary units as the UI writes them: "512 B",
// "1.5 KiB", "40.0 GiB", "160 GiB".
func bytesText(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	switch {
	case i == 0:
		return fmt.Sprintf("%.0f B", v)
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
