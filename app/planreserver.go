package app

import "strings"

// nameReservers names, in p's reasons and statuses, the members that GPUs
// are reserved for: alloc.Fit says "reserved for OUQZ-ZPGR from ..." (a
// device ID's first characters, all it knows), a person reads "reserved
// for bob from ...". A member without a name keeps the ID.
func nameReservers(p *Plan, names map[string]string) {
	var pairs []string
	seen := map[string]bool{}
	each := func(np *NodePlan) {
		for _, g := range np.GPUs {
			if g.Owner == "" || g.State != GPUBusy || seen[g.Owner] || names[g.Owner] == "" {
				continue
			}
			seen[g.Owner] = true
			pairs = append(pairs, "reserved for "+fitShort(g.Owner)+" ", "reserved for "+names[g.Owner]+" ")
		}
	}
	each(&p.NodePlan)
	for i := range p.Nodes {
		each(&p.Nodes[i])
	}
	if len(pairs) == 0 {
		return
	}
	r := strings.NewReplacer(pairs...)
	fix := func(np *NodePlan) {
		np.Reason = r.Replace(np.Reason)
		for i := range np.GPUs {
			g := &np.GPUs[i]
			g.Reason, g.Status = r.Replace(g.Reason), r.Replace(g.Status)
			if g.Owner != "" && g.State == GPUBusy {
				g.OwnerName = names[g.Owner]
			}
		}
	}
	fix(&p.NodePlan)
	for i := range p.Nodes {
		fix(&p.Nodes[i])
	}
}

// fitShort is a device ID as alloc.Fit's reasons write it: its first 9
// characters.
func fitShort(id string) string {
	if len(id) > 9 {
		return id[:9]
	}
	return id
}
