package slurm

import (
	"errors"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

func TestCanEverFit(t *testing.T) {
	meta, nodes, _ := ParseSinfo(readFixture(t, "sinfo-23.11-v0.0.40.json"))
	parts := []Partition{
		{Name: "gpu", Default: true, State: "up", Nodes: []string{"gpu01", "gpu02", "gpu03", "gpu04"}, MaxTimeS: 2 * 86400},
		{Name: "debug", State: "up", Nodes: []string{"gpu04"}},
		{Name: "old", State: "down", Nodes: []string{"gpu04"}},
	}
	c := BuildCluster(meta, nodes, parts, nil, nil)
	tests := []struct {
		name string
		r    jobs.Resources
		ok   bool
	}{
		{"4 gpus", jobs.Resources{GPUs: 4}, true},
		{"8 gpus on one node", jobs.Resources{GPUs: 8}, false},
		{"4 nodes x 4", jobs.Resources{Nodes: 4, GPUsPerNode: 4}, true},
		{"5 nodes", jobs.Resources{Nodes: 5, GPUsPerNode: 1}, false},
		{"too long", jobs.Resources{GPUs: 1, TimeLimit: 3 * 24 * time.Hour}, false},
		{"debug 2 nodes", jobs.Resources{Partition: "debug", Nodes: 2}, false},
		{"down partition", jobs.Resources{Partition: "old"}, false},
		{"no such partition", jobs.Resources{Partition: "nope"}, false},
		{"too many cpus", jobs.Resources{CPUs: 65}, false},
		{"too much memory", jobs.Resources{MemoryBytes: 600 << 30}, false},
		{"64 cpus 500 GiB", jobs.Resources{CPUs: 64, MemoryBytes: 500 << 30}, true},
	}
	for _, tt := range tests {
		err := CanEverFit(c, tt.r)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrNeverFits) {
			t.Errorf("%s: CanEverFit = %v, want fits %v", tt.name, err, tt.ok)
		}
	}
}

func TestPreview(t *testing.T) {
	e, r, _ := recordedExecutor(t, "squeue-23.11-v0.0.40.json")
	args, err := e.Preview(jobs.Task{ID: "j1", Owner: "DEV1", Cmd: []string{"true"}, Resources: jobs.Resources{Nodes: 2, GPUsPerNode: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if !contains(args, "--nodes=2") || !contains(args, "--gres=gpu:4") || r.count("sbatch") != 0 {
		t.Errorf("Preview = %q (sbatch ran %d times)", args, r.count("sbatch"))
	}
	if _, err := e.Preview(jobs.Task{ID: "j1", Owner: "DEV1", Image: "ubuntu", Cmd: []string{"true"}}); !errors.Is(err, ErrNoContainerRuntime) {
		t.Errorf("Preview of an image job without a runtime = %v", err)
	}
}
