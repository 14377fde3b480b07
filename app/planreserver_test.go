package app

import (
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
)

// TestPlanNamesReserver: a GPU reserved for another member is said
// reserved for that member by name, in the GPU's status and the plan's
// reason, not by the first characters of a device ID.
func TestPlanNamesReserver(t *testing.T) {
	at := time.Date(2026, 3, 24, 10, 0, 0, 0, time.UTC)
	bob := strings.Repeat("B", 60)
	units := []alloc.Unit{{ID: "GPU-0", Kind: alloc.GPU, Node: mikeID, Index: 0, Count: 1, MemBytes: 80 << 30}}
	res := alloc.Grant{Holder: alloc.Holder{Kind: alloc.Reservation, ID: "rsv-1", Member: bob, Name: "reservation rsv-1"},
		Units: []string{"GPU-0"}, From: at.Add(time.Hour), Until: at.Add(4 * time.Hour)}
	nodes := []Node{{ID: mikeID, Name: "mike", Online: true, Containers: true,
		GPUs:  []GPU{{Node: mikeID, Index: 0, UUID: "GPU-0", MemTotalBytes: 80 << 30}},
		Alloc: &Allocation{Units: units, Grants: []alloc.Grant{res}}}}
	p := planAt(nodes, nil, jobs.Spec{Image: "x:1", GPUs: 1}, nil, at, selfID)
	if p.Fits {
		t.Fatalf("a job with no time limit fits on a GPU reserved an hour ahead: %s", p.Reason)
	}
	nameReservers(&p, map[string]string{bob: "bob"})
	g := p.Nodes[0].GPUs[0]
	if !strings.HasPrefix(g.Status, "reserved for bob from ") || g.OwnerName != "bob" {
		t.Errorf("GPU 0 says %q (owner %q); want it reserved for bob", g.Status, g.OwnerName)
	}
	if !strings.Contains(p.Reason, "reserved for bob from ") || strings.Contains(p.Reason, "BBBB") {
		t.Errorf("the plan says %q; want the reservation's member by name", p.Reason)
	}
}
