package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
)

// withTopology completes g with what its node read about it at start
// (devices, from the node's record): its links and MIG instances.
func withTopology(g GPU, devices []gpu.Info) GPU {
	g.Links = []gpu.Link{}
	i := slices.IndexFunc(devices, func(d gpu.Info) bool { return d.UUID == g.UUID })
	if i < 0 {
		return g
	}
	d := devices[i]
	g.PCIBusID, g.MIG = d.PCIBusID, d.MIG
	if d.Links != nil {
		g.Links = d.Links
	}
	return g
}

// candidate is g as placement weighs it.
func candidate(g GPU) jobs.Candidate {
	return jobs.Candidate{Index: g.Index, UUID: g.UUID, TempC: g.TempC, Health: g.Health,
		HealthReason: g.HealthReason, Links: g.Links}
}

// fitsMIG decides whether the MIG instances spec names are all on the
// online node n and free (holder: GPU and MIG UUIDs -> the job holding
// them), and says why.
func fitsMIG(n Node, spec jobs.Spec, holder map[string]Job) (bool, string) {
	var busy []string
	for _, u := range spec.MIGIDs {
		g, ok := migGPU(n, u)
		if !ok {
			return false, fmt.Sprintf("has no MIG instance %s", u)
		}
		switch j, held := holder[u]; {
		case held:
			busy = append(busy, fmt.Sprintf("%s: job %s of %s", u, j.Name, j.OwnerName))
		case g.Health == "quarantined" || g.Health == "lost":
			return false, fmt.Sprintf("refused by rule %q: MIG instance %s: gpu %d %s: %s", "quarantined GPU", u, g.Index, g.Health, g.HealthReason)
		}
		if j, held := holder[g.UUID]; held {
			busy = append(busy, fmt.Sprintf("%s: its GPU %d is held by job %s of %s", u, g.Index, j.Name, j.OwnerName))
		}
	}
	if len(busy) == 0 {
		return true, fmt.Sprintf("%d MIG instances free", len(spec.MIGIDs))
	}
	reason := "MIG instances busy: " + strings.Join(busy, "; ")
	if !spec.Queue {
		return false, reason
	}
	return true, reason + "; the job will wait in the queue"
}

// migGPU is the GPU of n holding MIG instance uuid.
func migGPU(n Node, uuid string) (GPU, bool) {
	for _, g := range n.GPUs {
		if g.MIG == nil {
			continue
		}
		for _, in := range g.MIG.Instances {
			if in.UUID == uuid {
				return g, true
			}
		}
	}
	return GPU{}, false
}
