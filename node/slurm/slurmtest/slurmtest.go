//go:build linux

// Package slurmtest gives tests a real Slurm cluster: Debian's slurm-wlm
// (slurmctld, slurmd) and munge, started as root in a few seconds.
//
// The controller runs in one network namespace and each compute node's
// slurmd in its own, joined by a bridge that lives in a namespace of its
// own (or, with Options.Net, on a network the test already has, so that
// agents in its namespaces reach the cluster). Each node declares fake GPUs
// in gres.conf (AutoDetect=off, File= character devices cloned from
// /dev/null), so a job asking for GPUs gets the right CUDA_VISIBLE_DEVICES.
//
// Everything lives under t.TempDir(): munged runs on its own socket, the
// configuration is passed with -f to the daemons and as SLURM_CONF to the
// clients, never read from /etc. The test's cleanup stops every daemon by
// its pid file, kills what is left in the nodes' namespaces (job steps)
// and deletes the namespaces it made.
//
// Start gives one test its own cluster; Shared gives the tests of a
// test binary one cluster, started by the first that asks and stopped by
// the package's TestMain. Wrap and Command run clients in the controller's
// namespace, CommandOn a program in a node's.
//
// Start and Shared.Get skip the test without root or without the
// binaries, except under CI=true where they fail.
package slurmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Options shape the cluster; the zero value is two nodes of four GPUs.
type Options struct {
	Nodes       int    // compute nodes; 0: 2
	GPUsPerNode int    // fake GPUs on each node; 0: 4
	GPUType     string // their GRES type; "": "fake"
	CPUsPerNode int    // 0: 2
	// MemoryMB is each node's RealMemory; 0: 65536, more than this
	// machine may have (slurmd accepts it: config_overrides), so that jobs
	// asking the memory a pool machine gives by default (8 GiB) fit.
	MemoryMB int
	// Partitions of the cluster; nil: one partition "gpu" with every node,
	// the default, with no time limit.
	Partitions []Partition
	// Settings override or add slurm.conf keys ("KillWait": "1").
	Settings map[string]string
	// Net puts the cluster on a network the test made; nil: the cluster
	// makes its own namespaces and bridge.
	Net *Net
}

// Partition is one partition of the test cluster.
type Partition struct {
	Name    string
	Nodes   []string      // node names; nil: every node
	Default bool          // the cluster's default partition
	MaxTime time.Duration // 0: no limit
}

// Net is an existing network the cluster joins: slurmctld runs in the
// namespace Controller (which Start neither makes nor deletes, and where
// the cluster's agent runs), and each node's namespace gets a veth on
// Bridge, in the namespace Switch.
type Net struct {
	Switch         string   // namespace holding the bridge
	Bridge         string   // the bridge device in Switch
	Controller     string   // namespace of slurmctld, already on the bridge, its loopback up
	ControllerAddr string   // its address on the bridge
	NodeAddrs      []string // one per node, with its prefix length ("10.1.2.101/24")
}

// Cluster is a running test cluster.
type Cluster struct {
	Dir    string // everything of the cluster: config, state, logs, device files
	Conf   string // slurm.conf, what SLURM_CONF names
	Name   string // ClusterName
	Netns  string // the controller's network namespace (clients run there)
	Nodes  []Node
	GPUs   int    // fake GPUs per node
	Type   string // their GRES type
	Prefix string // of the namespaces this cluster made

	ownCtl  bool     // Netns was made by Start
	ctlAddr string   // slurmctld's address
	made    []string // namespaces Start made, deleted at Close
	closing sync.Once
}

// Node is one compute node.
type Node struct {
	Name  string // Slurm's NodeName
	Addr  string // NodeAddr, where slurmd and the jobs' ports listen
	Netns string // its network namespace
}

// seq tells apart the clusters of one test process.
var seq atomic.Int32

// Start brings a cluster up and returns once every node is idle. The
// test's cleanup tears it down (and logs the daemons' logs when the test
// failed).
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	requireSlurm(t)
	c, err := launch(t.TempDir(), opts)
	if c != nil {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("slurmtest: logs of the cluster:\n%s", c.Logs())
			}
			c.Close()
		})
	}
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	return c
}

// launch brings a cluster up in dir (whose parent it opens to the munge
// user: see openPath). On an error after the first namespace it returns
// the cluster too, for the caller to Close.
func launch(dir string, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	c := &Cluster{
		Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Name: "labtest",
		GPUs: opts.GPUsPerNode, Type: opts.GPUType,
		Prefix: fmt.Sprintf("sl%d-%d", os.Getpid(), seq.Add(1)),
	}
	if err := openPath(dir); err != nil {
		return nil, err
	}
	if err := c.network(opts); err != nil {
		return c, fmt.Errorf("network: %w", err)
	}
	if err := startMunge(filepath.Join(dir, "munge")); err != nil {
		return c, err
	}
	if err := c.writeConfig(opts); err != nil {
		return c, fmt.Errorf("write config: %w", err)
	}
	if err := c.startDaemons(); err != nil {
		return c, err
	}
	if err := c.waitIdle(30 * time.Second); err != nil {
		return c, fmt.Errorf("%w\n%s", err, c.Logs())
	}
	return c, nil
}

func (o Options) withDefaults() Options {
	if o.Nodes == 0 {
		o.Nodes = 2
	}
	if o.GPUsPerNode == 0 {
		o.GPUsPerNode = 4
	}
	if o.GPUType == "" {
		o.GPUType = "fake"
	}
	if o.CPUsPerNode == 0 {
		o.CPUsPerNode = 2
	}
	if o.MemoryMB == 0 {
		o.MemoryMB = 65536
	}
	if o.Partitions == nil {
		o.Partitions = []Partition{{Name: "gpu", Default: true}}
	}
	return o
}

// Env is the environment of a Slurm client of this cluster.
func (c *Cluster) Env() []string {
	return []string{"SLURM_CONF=" + c.Conf}
}

// Wrap is the command line that runs a program in the controller's
// namespace: put before a Slurm client's name, as slurm.CmdRunner's Wrap.
func (c *Cluster) Wrap() []string {
	return []string{"nsenter", "--net=" + nsPath(c.Netns), "--"}
}

// Command runs a Slurm client (sbatch, squeue...) or any program in the
// controller's namespace with the cluster's environment, in c.Dir.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return c.command(ctx, c.Netns, name, args...)
}

// CommandOn runs a program in the namespace of compute node n (a service
// of the node outside any job), with the cluster's environment, in c.Dir.
func (c *Cluster) CommandOn(ctx context.Context, n Node, name string, args ...string) *exec.Cmd {
	return c.command(ctx, n.Netns, name, args...)
}

func (c *Cluster) command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath(ns), "--", name}, args...)...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Dir = c.Dir
	return cmd
}

// Run runs Command and returns its standard output; it fails t when the
// command fails.
func (c *Cluster) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := c.Command(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// WaitJob polls squeue until Slurm job id has ended and returns its state
// (COMPLETED, FAILED, CANCELLED, TIMEOUT...); it fails t after limit.
func (c *Cluster) WaitJob(t testing.TB, id string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		state := strings.TrimSpace(c.Run(t, "squeue", "-h", "-t", "all", "-j", id, "-o", "%T"))
		switch state {
		case "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "":
		default:
			return state
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurm job %s still %s after %v", id, state, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Node returns the node named name.
func (c *Cluster) Node(name string) (Node, bool) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// waitIdle polls sinfo until every node is idle.
func (c *Cluster) waitIdle(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := c.Command(ctx, "sinfo", "-h", "-N", "-o", "%N %T").CombinedOutput()
		cancel()
		idle := map[string]bool{} // a node in two partitions has two lines
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[1] == "idle" {
				idle[f[0]] = true
			}
		}
		if err == nil && len(idle) == len(c.Nodes) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nodes not idle after %v (sinfo: %v): %s", limit, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Logs is the tail of every daemon's log, for failure reports.
func (c *Cluster) Logs() string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*.log"))
	logs = append(logs, filepath.Join(c.Dir, "munge", "munged.log"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- %s:\n%s\n", filepath.Base(f), tail(string(data), 15))
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Close stops the cluster: the nodes' daemons and job steps, the
// controller, munged; then it deletes the namespaces it made. It is
// idempotent, and the test's cleanup calls it.
func (c *Cluster) Close() {
	c.closing.Do(func() {
		c.stopDaemons()
		for i := len(c.made) - 1; i >= 0; i-- {
			exec.Command("ip", "netns", "del", c.made[i]).Run()
		}
	})
}
