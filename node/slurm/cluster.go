package slurm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Detect says whether a Slurm controller answers here: `sinfo` lists a
// partition. The error says why not.
func Detect(ctx context.Context, run Runner) error {
	out, err := run.Run(ctx, "sinfo", "--noheader", "--format=%P")
	if err != nil {
		return fmt.Errorf("slurm: sinfo does not answer: %w", err)
	}
	if len(out) == 0 {
		return errors.New("slurm: sinfo answers, but lists no partition")
	}
	return nil
}

// clusterCache keeps the last good read, shown with the error of a read
// that failed, and the cluster's name.
type clusterCache struct {
	mu   sync.Mutex // guards last and name
	last Cluster
	name string
}

// clusterName is ClusterName from `scontrol show config`, read once
// (sinfo --json of 22.05 does not name the cluster).
func (e *Executor) clusterName(ctx context.Context) string {
	e.cluster.mu.Lock()
	name := e.cluster.name
	e.cluster.mu.Unlock()
	if name != "" {
		return name
	}
	out, err := e.run.Run(ctx, "scontrol", "show", "config")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "ClusterName" {
			name = strings.TrimSpace(v)
		}
	}
	e.cluster.mu.Lock()
	e.cluster.name = name
	e.cluster.mu.Unlock()
	return name
}

// ReadCluster reads the cluster for its card: one sinfo --json, one
// scontrol show partition, and the queue's shared snapshot. When a read
// fails it returns the last good figures with Error set, and the error.
func (e *Executor) ReadCluster(ctx context.Context) (Cluster, error) {
	c, err := e.readCluster(ctx)
	e.cluster.mu.Lock()
	defer e.cluster.mu.Unlock()
	if err != nil {
		last := e.cluster.last
		last.Error = err.Error()
		return last, err
	}
	e.cluster.last = c
	return c, nil
}

func (e *Executor) readCluster(ctx context.Context) (Cluster, error) {
	info, err := e.run.Run(ctx, "sinfo", "--json")
	if err != nil {
		return Cluster{}, fmt.Errorf("read slurm nodes: %w", err)
	}
	meta, nodes, err := ParseSinfo(info)
	if err != nil {
		return Cluster{}, err
	}
	partText, err := e.run.Run(ctx, "scontrol", "show", "partition", "-o")
	if err != nil {
		return Cluster{}, fmt.Errorf("read slurm partitions: %w", err)
	}
	snap, err := e.q.get(ctx, true)
	if err != nil {
		return Cluster{}, fmt.Errorf("read slurm queue: %w", err)
	}
	e.learnAddrs(nodes)
	c := BuildCluster(meta, nodes, ParsePartitions(partText), snap.Jobs, e.ours)
	if c.Name == "" {
		c.Name = e.clusterName(ctx)
	}
	c.Containers = append([]string(nil), e.cfg.Containers...)
	c.Read = e.cfg.Now()
	return c, nil
}

// learnAddrs fills the node address cache from a sinfo read.
func (e *Executor) learnAddrs(nodes []Node) {
	e.addrMu.Lock()
	defer e.addrMu.Unlock()
	for _, n := range nodes {
		if n.Addr != "" {
			e.addrs[n.Name] = n.Addr
		}
	}
}

// BuildCluster assembles the card from parsed parts; ours says which
// jobs are labpool's (listed first in the queue).
func BuildCluster(meta Meta, nodes []Node, parts []Partition, jobs map[string]Job, ours func(Job) bool) Cluster {
	c := Cluster{Name: meta.Cluster, Version: meta.Release, Nodes: nodes, Partitions: parts}
	fillAlloc(c.Nodes, jobs)
	byNode := map[string]*Node{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		byNode[n.Name] = n
		c.GPUs = mergeGPUs(c.GPUs, n.GPUs...)
	}
	for i := range c.Partitions {
		p := &c.Partitions[i]
		for _, name := range p.Nodes {
			if n := byNode[name]; n != nil {
				p.GPUs = mergeGPUs(p.GPUs, n.GPUs...)
			}
		}
		if p.GPUs == nil {
			p.GPUs = []GPUCount{}
		}
	}
	var queue []QueueJob
	mine := map[string]bool{}
	for _, j := range jobs {
		switch {
		case j.State == "PENDING":
			c.Pending++
		case !Ended(j.State):
			c.Running++
		default:
			continue
		}
		queue = append(queue, queueJob(j))
		mine[j.ID] = ours != nil && ours(j)
	}
	sort.Slice(queue, func(a, b int) bool {
		qa, qb := queue[a], queue[b]
		if mine[qa.ID] != mine[qb.ID] {
			return mine[qa.ID]
		}
		if (qa.State == "PENDING") != (qb.State == "PENDING") {
			return qb.State == "PENDING"
		}
		return handleLess(qa.ID, qb.ID)
	})
	if len(queue) > QueueCap {
		queue = queue[:QueueCap]
	}
	c.Queue = queue
	if c.GPUs == nil {
		c.GPUs = []GPUCount{}
	}
	return c
}

func queueJob(j Job) QueueJob {
	return QueueJob{
		ID: j.ID, Name: j.Name, User: j.User, State: j.State, Reason: j.Reason,
		Partition: j.Partition, Nodes: j.Nodes, GPUs: j.GPUs,
		Submitted: j.Submitted, Started: j.Started,
		LabpoolJob: j.LabpoolJob, Owner: j.Owner,
	}
}

// fillAlloc sets the GPUs allocated on nodes that sinfo gave no use for
// (a v0.0.40+ group of several nodes) from the running jobs: each job's
// GPUs spread evenly over its nodes.
func fillAlloc(nodes []Node, jobs map[string]Job) {
	used := map[string]int{}
	for _, j := range jobs {
		if j.State != "RUNNING" && j.State != "COMPLETING" || len(j.Nodes) == 0 {
			continue
		}
		for _, n := range j.Nodes {
			used[n] += j.GPUs / len(j.Nodes)
		}
	}
	for i := range nodes {
		n := &nodes[i]
		have := 0
		for _, g := range n.GPUs {
			have += g.Alloc
		}
		if have == 0 && used[n.Name] > 0 {
			n.GPUs = withAlloc(n.GPUs, []GPUCount{{Type: "\x00", Total: used[n.Name]}})
		}
		if n.GPUs == nil {
			n.GPUs = []GPUCount{}
		}
	}
}
