package slurm

import (
	"errors"
	"fmt"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// ErrNeverFits is wrapped by CanEverFit's refusals: no state of the
// cluster could run the job (as opposed to a job that waits its turn).
var ErrNeverFits = errors.New("the cluster can never run this job")

// CanEverFit says whether the partition r names (or the default one)
// could ever run a job asking r: enough nodes, each with the GPUs, CPUs
// and memory asked, within the partition's time limit. It reads the
// cluster's configuration only, not what is free now: a job that fits
// waits in Slurm's queue for its turn.
func CanEverFit(c Cluster, r jobs.Resources) error {
	p, err := partitionFor(c, r.Partition)
	if err != nil {
		return err
	}
	if p.State != "" && p.State != "up" {
		return fmt.Errorf("slurm: partition %s is %s: %w", p.Name, p.State, ErrNeverFits)
	}
	if p.MaxTimeS > 0 && r.TimeLimit > time.Duration(p.MaxTimeS)*time.Second {
		return fmt.Errorf("slurm: time limit %s is over partition %s's %s: %w", r.TimeLimit, p.Name, time.Duration(p.MaxTimeS)*time.Second, ErrNeverFits)
	}
	nodes, gpus := max(1, r.Nodes), r.GPUs
	if r.Nodes > 1 || gpus == 0 {
		gpus = r.GPUsPerNode
	}
	fit := 0
	for _, n := range c.Nodes {
		if contains(p.Nodes, n.Name) && nodeFits(n, gpus, r) {
			fit++
		}
	}
	if fit >= nodes {
		return nil
	}
	return fmt.Errorf("slurm: partition %s has %d nodes with %d GPUs, %s CPUs and %s memory each, and the job asks %d: %w",
		p.Name, fit, gpus, cpuText(r.CPUs), memText(r.MemoryBytes), nodes, ErrNeverFits)
}

// partitionFor is the partition named, or the default one.
func partitionFor(c Cluster, name string) (Partition, error) {
	for _, p := range c.Partitions {
		if p.Name == name || name == "" && p.Default {
			return p, nil
		}
	}
	if name == "" {
		return Partition{}, fmt.Errorf("slurm: the cluster has no default partition: name one: %w", ErrNeverFits)
	}
	return Partition{}, fmt.Errorf("slurm: the cluster has no partition %q: %w", name, ErrNeverFits)
}

// nodeFits says whether one node has the GPUs, CPUs and memory asked.
func nodeFits(n Node, gpus int, r jobs.Resources) bool {
	total := 0
	for _, g := range n.GPUs {
		total += g.Total
	}
	return total >= gpus && float64(n.CPUs) >= r.CPUs && (r.MemoryBytes == 0 || n.MemoryMB<<20 >= r.MemoryBytes)
}

func cpuText(c float64) string {
	if c <= 0 {
		return "any"
	}
	return fmt.Sprint(c)
}

func memText(b int64) string {
	if b <= 0 {
		return "any"
	}
	return fmt.Sprintf("%d MiB", (b+(1<<20)-1)>>20)
}

// Preview is what Start would ask sbatch for t (the plan shows it), or
// why Start would refuse t.
func (e *Executor) Preview(t jobs.Task) ([]string, error) {
	comment, err := Comment(t.ID, t.Owner)
	if err != nil {
		return nil, err
	}
	b, err := buildBatch(t, batchPlan{Comment: comment, Output: e.cfg.StateDir + "/slurm-%j.out",
		Dir: e.cfg.StateDir, Containers: e.cfg.Containers, Apptainer: e.apptainer})
	if err != nil {
		return nil, err
	}
	return b.Args, nil
}
