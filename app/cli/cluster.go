package cli

import (
	"errors"
	"fmt"
	"math"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/spf13/pflag"
)

// clusterFlags are run's flags for a Slurm cluster.
type clusterFlags struct {
	partition, time    string
	nodes, gpusPerNode int
}

func (f *clusterFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.partition, "partition", "", "Slurm partition (a cluster only; default: the cluster's default)")
	fl.IntVar(&f.nodes, "nodes", 0, "number of nodes (a cluster only; with --gpus-per-node)")
	fl.IntVar(&f.gpusPerNode, "gpus-per-node", 0, "GPUs on each node (a cluster only)")
	fl.StringVar(&f.time, "time", "", "time limit: the job is stopped then (a container too): 2h, 90m, or Slurm's 1-12:00:00, 30:00")
}

// fill puts the cluster flags into s, whose GPUs the --gpus flag set.
func (f *clusterFlags) fill(s *jobs.Spec) error {
	switch {
	case f.nodes < 0 || f.gpusPerNode < 0:
		return errors.New("--nodes and --gpus-per-node count: give 1 or more")
	case s.GPUs > 0 && f.nodes > 1:
		return fmt.Errorf("--gpus counts the GPUs of a job on one node: with --nodes %d, use --gpus-per-node", f.nodes)
	case s.GPUs > 0 && f.gpusPerNode > 0 && s.GPUs != f.gpusPerNode:
		return errors.New("give --gpus or --gpus-per-node, not both")
	}
	s.Partition = f.partition
	if f.nodes > 1 {
		s.Nodes, s.GPUsPerNode = f.nodes, f.gpusPerNode
	} else if f.gpusPerNode > 0 {
		s.GPUs = f.gpusPerNode // one node: its GPUs are the job's
	}
	if f.time != "" {
		d, err := slurm.ParseTimeLimit(f.time)
		if err != nil {
			return fmt.Errorf("--time: %w", err)
		}
		s.TimeLimitSeconds = int64(math.Ceil(d.Seconds()))
	}
	return nil
}
