package app

import (
	"slices"
	"strconv"
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

// socketNote says when the GPUs idx of n sit on more than one CPU socket
// (NUMA node): "GPUs 0,1 and 4,5 sit on different CPU sockets (NUMA
// nodes): traffic between them crosses the CPUs' interconnect". Two GPUs
// do where NVML reads their closest common PCIe ancestor as SYS; where
// every such pair shares NVLink, their traffic does not cross it. "" for
// one socket, or where NVML could not tell.
func socketNote(n Node, idx []int) string {
	byIndex := map[int]GPU{}
	for _, g := range n.GPUs {
		byIndex[g.Index] = g
	}
	sorted := slices.Sorted(slices.Values(idx))
	var groups [][]int // GPUs that reach the first of each without SYS (or NVML cannot tell), in index order
	crossed := false   // a pair across sockets without NVLink
	for _, i := range sorted {
		placed := false
		for k, grp := range groups {
			if l, ok := linkOf(byIndex[i], grp[0]); !ok || l.PCIe != "SYS" {
				groups[k], placed = append(grp, i), true
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
		for _, k := range sorted {
			if l, ok := linkOf(byIndex[i], k); ok && l.PCIe == "SYS" && l.NVLinks == 0 {
				crossed = true
			}
		}
	}
	if len(groups) < 2 {
		return ""
	}
	words := make([]string, len(groups))
	for k, grp := range groups {
		words[k] = intList(grp)
	}
	s := "GPUs " + strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1] + " sit on different CPU sockets (NUMA nodes)"
	if crossed {
		s += ": traffic between them crosses the CPUs' interconnect"
	}
	return s
}

// linkOf is how g reaches the GPU of index peer, as its node read it.
func linkOf(g GPU, peer int) (gpu.Link, bool) {
	i := slices.IndexFunc(g.Links, func(l gpu.Link) bool { return l.Peer == peer })
	if i < 0 || g.Links[i].PCIe == "" {
		return gpu.Link{}, false
	}
	return g.Links[i], true
}

// intList is "0,1,3".
func intList(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
