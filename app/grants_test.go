package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/schema"
)

// TestGrantsRecordIsItsOriginsOwn: a machine's grants are read from its
// own record only. Alpha writes a record "about" this machine (units with
// this machine's GPU IDs and Node, a grant holding them): this machine's
// view stays what its own record says, and alpha's units are alpha's. A
// record holding a unit it does not list is refused, naming the rule.
func TestGrantsRecordIsItsOriginsOwn(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, mikeID, "mike", false)
	own := Allocation{Units: []alloc.Unit{{ID: "SELF-gpu0", Kind: alloc.GPU, Node: selfID}}, Grants: []alloc.Grant{}}
	forged := Allocation{
		Units:  []alloc.Unit{{ID: "SELF-gpu0", Kind: alloc.GPU, Node: selfID}},
		Grants: []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Job, ID: "forged", Member: alphaID}, Units: []string{"SELF-gpu0"}}},
	}
	stray := Allocation{
		Units:  []alloc.Unit{{ID: "MIKE-gpu0", Kind: alloc.GPU}},
		Grants: []alloc.Grant{{Holder: alloc.Holder{Kind: alloc.Reservation, ID: "r", Member: mikeID}, Units: []string{"SELF-gpu0"}}},
	}
	putRecord(t, db, selfID, KindGrants, "", t0, mustJSON(t, own))
	putRecord(t, db, alphaID, KindGrants, "", t0, mustJSON(t, forged))
	putRecord(t, db, mikeID, KindGrants, "", t0, mustJSON(t, stray))
	nodes, err := NewReader(db, Self{ID: selfID, Name: "zeta"}).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	if a := byID[selfID].Alloc; a == nil || len(a.Grants) != 0 || len(a.Units) != 1 || a.Units[0].Node != selfID {
		t.Errorf("this machine's view %+v; want its own record: one unit, no grant", a)
	}
	if a := byID[alphaID].Alloc; a == nil || len(a.Units) != 1 || a.Units[0].Node != alphaID {
		t.Errorf("alpha's view %+v; want its units alpha's, whatever node its data names", a)
	}
	if n := byID[mikeID]; n.Alloc != nil || !strings.Contains(n.AllocError, "rule: "+ruleGrants) {
		t.Errorf("mike's record with a grant of a unit not its own: %+v, %q; want refused naming the rule", n.Alloc, n.AllocError)
	}
	// Fit on this machine's view: alpha's grant keeps nothing of it from
	// a job.
	units, grants := viewOf(byID[selfID], nil)
	if d := alloc.Fit(units, grants, alloc.Request{Count: 1}, t0); !d.Fits || d.Node != selfID {
		t.Errorf("a GPU of this machine, with alpha's forged grant in the pool: %+v; want it to fit here", d)
	}
}

func TestDecodeAllocationRefuses(t *testing.T) {
	unit := alloc.Unit{ID: "g0", Kind: alloc.GPU}
	many := make([]alloc.Unit, maxAllocUnits+1)
	for i := range many {
		many[i] = alloc.Unit{ID: strings.Repeat("x", 1+i%7) + string(rune('a'+i%26)) + time.Duration(i).String(), Kind: alloc.GPU}
	}
	for name, a := range map[string]Allocation{
		"too many units":    {Units: many},
		"a unit twice":      {Units: []alloc.Unit{unit, unit}},
		"an empty unit ID":  {Units: []alloc.Unit{{Kind: alloc.GPU}}},
		"a share over 1":    {Units: []alloc.Unit{unit}, Grants: []alloc.Grant{{Units: []string{"g0"}, Share: 1.5}}},
		"negative GPUs":     {Units: []alloc.Unit{unit}, Grants: []alloc.Grant{{Units: []string{"g0"}, GPUs: -1}}},
		"a unit not listed": {Units: []alloc.Unit{unit}, Grants: []alloc.Grant{{Units: []string{"g1"}}}},
	} {
		if _, err := decodeAllocation(alphaID, mustJSON(t, a)); err == nil || !strings.Contains(err.Error(), ruleGrants) {
			t.Errorf("%s: %v; want refused naming the rule", name, err)
		}
	}
	if _, err := decodeAllocation(alphaID, []byte(`{"units":[{"id":"g0","kind":"gpu"}],"grants":[{"units":["g0"],"share":0.5}]}`)); err != nil {
		t.Errorf("a share of one unit: %v", err)
	}
}

func FuzzDecodeAllocation(f *testing.F) {
	f.Add([]byte(`{"units":[{"id":"g0","kind":"gpu"}],"grants":[{"holder":{"kind":"job","id":"j"},"units":["g0"],"share":0.5}]}`))
	f.Add([]byte(`{"units":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decodeAllocation(alphaID, data)
		if err != nil {
			return
		}
		own := map[string]bool{}
		for _, u := range a.Units {
			if u.Node != alphaID {
				t.Fatalf("unit %q of node %q accepted from %s", u.ID, u.Node, alphaID)
			}
			own[u.ID] = true
		}
		for _, g := range a.Grants {
			for _, u := range g.Units {
				if !own[u] {
					t.Fatalf("a grant of %q, not alpha's, accepted", u)
				}
			}
		}
		alloc.Fit(a.Units, a.Grants, alloc.Request{Count: 1}, t0)
	})
}

// TestClusterGrantsRecordFits: the grants record of a cluster's machine
// with a full queue (slurm.QueueCap running jobs with long names, over 16
// partitions of all nodes) stays under the record's cap and the bounds a
// reader holds it to: the agent's own record is never refused.
func TestClusterGrantsRecordFits(t *testing.T) {
	c := slurm.Cluster{Name: strings.Repeat("h", 64)}
	var all []string
	for i := range 64 {
		n := slurm.Node{Name: fmt.Sprintf("node-%03d", i), State: "allocated", GPUs: []slurm.GPUCount{{Total: 8, Alloc: 8}}}
		c.Nodes, all = append(c.Nodes, n), append(all, n.Name)
	}
	for i := range 16 {
		c.Partitions = append(c.Partitions, slurm.Partition{Name: fmt.Sprintf("partition-%02d", i), Nodes: all})
	}
	for i := range slurm.QueueCap {
		c.Queue = append(c.Queue, slurm.QueueJob{ID: fmt.Sprint(9000000 + i), User: strings.Repeat("u", 32), State: "RUNNING",
			Nodes: all[i%64 : i%64+1], GPUs: 2})
	}
	units, grants := slurm.Allocation(c, selfID)
	data := mustJSON(t, Allocation{Units: units, Grants: grants})
	if err := schema.Check(KindGrants, "", len(data)); err != nil {
		t.Fatalf("%d bytes: %v", len(data), err)
	}
	if _, err := decodeAllocation(selfID, data); err != nil {
		t.Fatal(err)
	}
}

// TestClusterGrantsAreTheClustersOwn: the free GPUs a plan counts on a
// cluster are those of the cluster machine's own grants record. Alpha
// writes a record with the cluster's partition unit, all free, to draw
// jobs there (or, holding it, to keep them away): the plan for the
// cluster reads only the cluster's record, and alpha's unit is alpha's.
func TestClusterGrantsAreTheClustersOwn(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha", false)
	putMember(t, db, hpcID, "hpc", false)
	c := hpcCluster()
	putNode(t, db, hpcID, NodeRecord{Info: agent.Info{ID: hpcID, Name: "hpc"}, Containers: true, Cluster: c})
	units, grants := slurm.Allocation(*c, hpcID)
	gpu := slurm.PartitionUnit(*c, "gpu")
	grants = append(grants, alloc.Grant{Holder: alloc.Holder{Kind: alloc.SlurmJob, ID: "105"}, Units: []string{gpu}, GPUs: 3})
	putRecord(t, db, hpcID, KindGrants, "", t0, mustJSON(t, Allocation{Units: units, Grants: grants}))
	forged := Allocation{Units: []alloc.Unit{{ID: gpu, Kind: alloc.Cluster, Node: hpcID, Count: 64}}, Grants: []alloc.Grant{}}
	putRecord(t, db, alphaID, KindGrants, "", t0, mustJSON(t, forged))
	nodes, err := NewReader(db, Self{ID: selfID, Name: "zeta"}).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var hpc *Node
	for i := range nodes {
		switch nodes[i].ID {
		case hpcID:
			hpc = &nodes[i]
		case alphaID:
			if a := nodes[i].Alloc; a == nil || a.Units[0].Node != alphaID {
				t.Errorf("alpha's record %+v; want its unit alpha's", a)
			}
		}
	}
	if hpc == nil || hpc.Cluster == nil {
		t.Fatalf("no cluster machine among %d nodes", len(nodes))
	}
	if p := plan(nodes, hpc, jobs.Spec{Cmd: []string{"x"}, GPUs: 1}, nil); p.Free != 1 {
		t.Errorf("the cluster's free GPUs: %d; want 1, by its own record (3 more held by job 105), whatever alpha wrote", p.Free)
	}
}
