package slurm

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
)

// TestAllocation: a cluster's GPUs are Cluster units (the cluster and
// each partition, counting only nodes that take jobs), its running jobs
// SlurmJob grants on the units whose nodes they run on, and GPUs sinfo
// says are allocated beyond the queue read one more grant, so that
// alloc.Free agrees with sinfo's counts.
func TestAllocation(t *testing.T) {
	c := planCluster()
	c.Nodes[0].GPUs[0].Alloc = 3 // n1: 3 of 4 allocated
	c.Queue = append(c.Queue,
		QueueJob{ID: "12", User: "alice", State: "RUNNING", Partition: "gpu", Nodes: []string{"n1"}, GPUs: 2},
		QueueJob{ID: "13", User: "bob", State: "RUNNING", Partition: "gpu", Nodes: []string{"n3"}, GPUs: 8}, // drained: not usable GPUs
		QueueJob{ID: "14", User: "carol", State: "PENDING", Partition: "gpu", GPUs: 4})
	units, grants := Allocation(c, "dev")
	count := map[string]int{}
	for _, u := range units {
		if u.Kind != alloc.Cluster || u.Node != "dev" {
			t.Errorf("unit %+v: want a Cluster unit of node dev", u)
		}
		count[u.ID] = u.Count
	}
	free := func(id string) int { return freeIn(units, grants, id) }
	tests := []struct {
		unit        string
		count, free int
	}{
		{"slurm:hpc", 8, 5},       // n1 + n2; n3 drained
		{"slurm:hpc/gpu", 8, 5},   //
		{"slurm:hpc/maint", 4, 4}, // n2 only
		{"slurm:hpc/cpu", 0, 0},
	}
	for _, tt := range tests {
		if count[tt.unit] != tt.count || free(tt.unit) != tt.free {
			t.Errorf("%s: %d GPUs, %d free; want %d, %d", tt.unit, count[tt.unit], free(tt.unit), tt.count, tt.free)
		}
	}
	var held []string
	for _, g := range grants {
		if g.Holder.Kind != alloc.SlurmJob {
			t.Errorf("grant %+v: want a SlurmJob grant", g)
		}
		if g.Units[0] == "slurm:hpc/gpu" {
			held = append(held, g.Holder.ID+":"+string(rune('0'+g.GPUs)))
		}
	}
	if got := strings.Join(held, " "); got != "12:2 other:1" {
		t.Errorf("grants on partition gpu: %s; want 12:2 other:1 (job 13 is on a drained node, 14 pending)", got)
	}
	if FreeGPUs(c) != 5 || PartitionFree(c, "gpu") != 5 || PartitionFree(c, "maint") != 4 {
		t.Errorf("FreeGPUs = %d, partition gpu %d, maint %d; want 5, 5, 4", FreeGPUs(c), PartitionFree(c, "gpu"), PartitionFree(c, "maint"))
	}
}

// TestPlanNamesHolders: a job that waits because the partition has too
// few GPUs free says so by alloc.Fit, naming the Slurm jobs that hold
// them.
func TestPlanNamesHolders(t *testing.T) {
	c := planCluster()
	c.Read = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c.Queue = append(c.Queue, QueueJob{ID: "12", User: "alice", State: "RUNNING", Partition: "gpu", Nodes: []string{"n1"}, GPUs: 2})
	p := Plan(c, jobs.Resources{GPUs: 8})
	want := "will wait in Slurm's queue: partition gpu has 6 of the 8 GPUs asked free (held by slurm job 12 of alice: 2); n3 (drained) can run it"
	if p.StartsNow || p.Reason != want {
		t.Errorf("Plan: now %v, %q;\nwant %q", p.StartsNow, p.Reason, want)
	}
}

// FuzzAllocation: a cluster's card comes from its agent, over the network,
// to every planner. Whatever it says, Allocation neither panics nor
// writes a grant of no GPUs or a negative count (a reader refuses a
// record with one: the cluster's own record would be refused whole), and
// alloc.Free stays within a unit's count.
func FuzzAllocation(f *testing.F) {
	f.Add([]byte(`{"name":"hpc","partitions":[{"name":"gpu","nodes":["n1"]}],"nodes":[{"name":"n1","state":"mixed","gpus":[{"total":4,"alloc":2}]}],
		"queue":[{"id":"1","state":"RUNNING","nodes":["n1"],"gpus":2}]}`))
	f.Add([]byte(`{"nodes":[{"name":"n","state":"idle","gpus":[{"total":9223372036854775807,"alloc":-9223372036854775808},{"total":9223372036854775807}]}],
		"queue":[{"id":"x","state":"RUNNING","nodes":["n","n","n"],"gpus":9223372036854775807}]}`))
	f.Add([]byte(`{"name":"h","partitions":[{"name":"gpu"},{"name":"gpu"}],"nodes":[{"name":"n","state":"idle","partitions":["gpu"],"gpus":[{"total":2}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Cluster
		if json.Unmarshal(b, &c) != nil {
			return
		}
		units, grants := Allocation(c, "dev")
		ids := map[string]bool{}
		for _, u := range units {
			if ids[u.ID] {
				t.Fatalf("unit %q twice", u.ID)
			}
			ids[u.ID] = true
		}
		for _, g := range grants {
			if g.GPUs <= 0 || len(g.Units) != 1 {
				t.Fatalf("grant %+v", g)
			}
		}
		for _, u := range units {
			if u.Count < 0 {
				t.Fatalf("unit %+v", u)
			}
			if free := alloc.Free(u, grants, time.Time{}); free < 0 || free > u.Count {
				t.Fatalf("unit %+v: %d free", u, free)
			}
		}
		// Counting alone (the jobs' grants gathered) answers as the named record.
		for _, p := range c.Partitions {
			if got, want := PartitionFree(c, p.Name), freeIn(units, grants, PartitionUnit(c, p.Name)); got != want {
				t.Fatalf("partition %q: %d free counted alone, %d by the record", p.Name, got, want)
			}
		}
		if got, want := FreeGPUs(c), freeIn(units, grants, ClusterUnit(c)); got != want {
			t.Fatalf("cluster: %d free counted alone, %d by the record", got, want)
		}
		UsableGPUs(c)
	})
}
