package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/slurm"
)

// bigCluster is a cluster of nodes nodes and a queue of slurm.QueueCap
// jobs whose names are name bytes long.
func bigCluster(nodes, name int) slurm.Cluster {
	c := slurm.Cluster{Name: "big", Running: 150, Pending: 4000}
	for i := range nodes {
		c.Nodes = append(c.Nodes, slurm.Node{Name: fmt.Sprintf("gpu%04d", i), State: "mixed", Partitions: []string{"gpu"},
			CPUs: 128, MemoryMB: 1 << 20, GPUs: []slurm.GPUCount{{Type: "h100", Total: 8, Alloc: 3}}})
	}
	for i := range slurm.QueueCap {
		c.Queue = append(c.Queue, slurm.QueueJob{ID: fmt.Sprint(1000 + i), Name: strings.Repeat("n", name), User: "lab",
			State: "PENDING", Reason: "Resources", Partition: "gpu", GPUs: 8, LabpoolJob: fmt.Sprintf("job%d", i)})
	}
	return c
}

func TestMarshalNodeRecordFitsTheCap(t *testing.T) {
	tests := []struct {
		name                 string
		cluster              slurm.Cluster
		wantQueue, wantNodes func(int) bool
	}{
		{"small: whole", bigCluster(16, 40),
			func(q int) bool { return q == slurm.QueueCap }, func(n int) bool { return n == 16 }},
		{"long job names: the queue's tail goes", bigCluster(16, 2000),
			func(q int) bool { return q > 0 && q < slurm.QueueCap }, func(n int) bool { return n == 16 }},
		{"thousands of nodes: the queue, then nodes' tail go", bigCluster(5000, 200),
			func(q int) bool { return q == 0 }, func(n int) bool { return n > 100 && n < 5000 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := NodeRecord{Addresses: []string{"10.0.0.1:7420"}, Cluster: &tt.cluster}
			data, err := MarshalNodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > nodeRecordCap {
				t.Fatalf("record is %d bytes, over the cap of %d", len(data), nodeRecordCap)
			}
			var got NodeRecord
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			q, n := len(got.Cluster.Queue), len(got.Cluster.Nodes)
			if !tt.wantQueue(q) || !tt.wantNodes(n) {
				t.Errorf("kept %d queue entries and %d nodes", q, n)
			}
			if q > 0 && got.Cluster.Queue[0].LabpoolJob != "job0" {
				t.Errorf("queue starts with %+v, want its head kept (labpool's jobs lead)", got.Cluster.Queue[0])
			}
			if got.Cluster.Pending != 4000 || len(tt.cluster.Queue) != slurm.QueueCap {
				t.Errorf("counts %d pending, card's queue %d: the counts stay, the caller's card is not cut", got.Cluster.Pending, len(tt.cluster.Queue))
			}
			// The most that fits: one more queue entry (or node) would not.
			if q > 0 && q < slurm.QueueCap {
				more := *got.Cluster
				more.Queue = tt.cluster.Queue[:q+1]
				if b, _ := json.Marshal(NodeRecord{Addresses: rec.Addresses, Cluster: &more}); len(b) <= nodeRecordCap {
					t.Errorf("%d queue entries kept, %d fit", q, q+1)
				}
			}
		})
	}
}
