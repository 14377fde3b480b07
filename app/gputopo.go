package app

import (
	"slices"

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
