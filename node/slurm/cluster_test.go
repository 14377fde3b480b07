//go:build linux

package slurm

import (
	"os"
	"testing"
	"time"

	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// The executor's real tests run on one slurmtest cluster for the whole
// test binary: slurmctld and two slurmd (node1, node2), each in its own
// network namespace with 4 fake GPUs. Partition "gpu" (the default) has
// both nodes; "first" has node1 alone, for tests that need two jobs on one
// node. The first test that asks starts it; TestMain stops it.
var cluster = &slurmtest.Shared{Options: slurmtest.Options{
	Partitions: []slurmtest.Partition{
		{Name: "gpu", Default: true},
		{Name: "first", Nodes: []string{"node1"}},
	},
}}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == OpenOutputVerb { // this binary as labpool (TestRealSudoRule)
		os.Exit(ServeOpenOutput(os.Args[2:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	cluster.Close()
	os.Exit(code)
}

// needSlurm returns the shared cluster, or skips (fails in CI) when this
// machine cannot run one.
func needSlurm(t testing.TB) *slurmtest.Cluster {
	t.Helper()
	return cluster.Get(t)
}

// realRunner runs the executor's commands in the controller's namespace.
func realRunner(c *slurmtest.Cluster) *CmdRunner {
	return &CmdRunner{Conf: c.Conf, Wrap: c.Wrap(), Timeout: 20 * time.Second}
}

// realConfig is an executor's configuration on c, with a state directory
// of its own and a job account of its own (a user the test makes).
func realConfig(t testing.TB, c *slurmtest.Cluster) Config {
	return Config{Conf: c.Conf, Wrap: c.Wrap(), StateDir: privateDir(t), JobUser: slurmtest.AddUser(t),
		Tick: 200 * time.Millisecond, Timeout: 20 * time.Second}
}
