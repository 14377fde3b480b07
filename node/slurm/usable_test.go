package slurm

import (
	"maps"
	"testing"
)

// TestUsableGPUs: free GPUs count on nodes that take jobs; the rest are
// out of service, by type; each partition counts its own nodes (by the
// node's list or the partition's). The UI shows these and counts nothing
// itself (the copy in frontend/src/lib/cluster.ts went).
func TestUsableGPUs(t *testing.T) {
	node := func(name, state, typ string, total, alloc int, parts ...string) Node {
		return Node{Name: name, State: state, Partitions: parts, GPUs: []GPUCount{{Type: typ, Total: total, Alloc: alloc}}}
	}
	c := Cluster{
		Nodes: []Node{node("n1", "mixed", "a100", 4, 3, "gpu"), node("n2", "idle", "a100", 4, 0, "gpu", "debug"),
			node("n3", "drained", "h100", 8, 0, "gpu"), node("n4", "idle*", "", 2, 0)},
		Partitions: []Partition{{Name: "gpu"}, {Name: "debug", Nodes: []string{"n2"}}, {Name: "old", Nodes: []string{"n4"}}},
	}
	u := UsableGPUs(c)
	cases := []struct {
		name string
		got  Usable
		want Usable
	}{
		{"cluster", u.Usable, Usable{Free: 5, OutOfService: map[string]int{"h100": 8, "gpu": 2}}},
		{"gpu", u.Partitions["gpu"], Usable{Free: 5, OutOfService: map[string]int{"h100": 8}}},
		{"debug", u.Partitions["debug"], Usable{Free: 4, OutOfService: map[string]int{}}},
		{"old", u.Partitions["old"], Usable{Free: 0, OutOfService: map[string]int{"gpu": 2}}},
	}
	for _, tt := range cases {
		if tt.got.Free != tt.want.Free || !maps.Equal(tt.got.OutOfService, tt.want.OutOfService) {
			t.Errorf("%s: %+v; want %+v", tt.name, tt.got, tt.want)
		}
	}
	if FreeGPUs(c) != 5 {
		t.Errorf("FreeGPUs = %d; want 5", FreeGPUs(c))
	}
	for state, takes := range map[string]bool{"mixed+drain": false, "idle*": false, "allocated": true} {
		if TakesJobs(state) != takes {
			t.Errorf("TakesJobs(%q) = %v", state, !takes)
		}
	}
}
