package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/slurm"
)

// queueShown is how many entries of a cluster's queue the text shows
// (--json has them all).
const queueShown = 10

// writeClusters writes, after the table of machines, each Slurm cluster's
// card: partitions, nodes, GPUs by type and the queue.
func writeClusters(w io.Writer, nodes []app.Node, now time.Time) error {
	for _, n := range nodes {
		if n.Cluster != nil {
			if err := writeCluster(w, n, now); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeCluster(w io.Writer, n app.Node, now time.Time) error {
	c := n.Cluster
	fmt.Fprintf(w, "\n%s: Slurm cluster %s", n.Name, c.Name)
	if c.Version != "" {
		fmt.Fprintf(w, " (Slurm %s)", c.Version)
	}
	fmt.Fprintf(w, ", %s; %s\n", clusterRead(c.Read, n.Online, now), containersText(c.Containers))
	if c.Error != "" {
		fmt.Fprintf(w, "  last read failed: %s (the figures are the last good ones)\n", c.Error)
	}
	fmt.Fprintf(w, "  GPUs: %s\n", gpuCounts(c.GPUs))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PARTITION\tSTATE\tNODES\tCPUS\tGPUS\tMAX TIME")
	for _, p := range c.Partitions {
		name := p.Name
		if p.Default {
			name += "*"
		}
		maxTime := "unlimited"
		if p.MaxTimeS > 0 {
			maxTime = slurm.FormatTimeLimit(time.Duration(p.MaxTimeS) * time.Second)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\n", name, p.State, len(p.Nodes), p.CPUs, gpuCounts(p.GPUs), maxTime)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tSTATE\tPARTITIONS\tCPUS\tMEMORY\tGPUS")
	for _, cn := range c.Nodes {
		st := cn.State
		if cn.Reason != "" {
			st += " (" + cn.Reason + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d/%d\t%s/%s\t%s\n", cn.Name, st, strings.Join(cn.Partitions, ","), cn.CPUsAlloc, cn.CPUs,
			Bytes(uint64(cn.MemAllocMB)<<20), Bytes(uint64(cn.MemoryMB)<<20), gpuCounts(cn.GPUs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeQueue(w, n, now)
}

// writeQueue writes the first entries of a cluster's queue.
func writeQueue(w io.Writer, n app.Node, now time.Time) error {
	c := n.Cluster
	fmt.Fprintf(w, "  queue: %d running, %d pending\n", c.Running, c.Pending)
	if len(c.Queue) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SLURM ID\tNAME\tSTATE\tPARTITION\tGPUS\tNODES\tOWNER\tSUBMITTED")
	for i, q := range c.Queue {
		if i == queueShown {
			fmt.Fprintf(tw, "  … %d more (labpool nodes --json)\n", len(c.Queue)-queueShown)
			break
		}
		st := q.State
		if q.Reason != "" && q.Reason != "None" {
			st += " (" + q.Reason + ")"
		}
		nodes := "-"
		if len(q.Nodes) > 0 {
			nodes = strings.Join(q.Nodes, ",")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", q.ID, q.Name, st, q.Partition, q.GPUs, nodes, queueOwner(n, q), Ago(q.Submitted, now))
	}
	return tw.Flush()
}

// queueOwner is who a queue entry is for: the member who launched it
// through labpool, or else Slurm's user.
func queueOwner(n app.Node, q slurm.QueueJob) string {
	if name, ok := n.ClusterOwners[q.Owner]; ok && q.Owner != "" {
		return name + " (labpool)"
	}
	if q.User == "" {
		return "-"
	}
	return q.User
}

// gpuCounts writes GPUs by type: "a100 3/4 alloc, v100 0/2 alloc"; "none".
func gpuCounts(gs []slurm.GPUCount) string {
	if len(gs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		t := g.Type
		if t == "" {
			t = "gpu"
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d alloc", t, g.Alloc, g.Total))
	}
	return strings.Join(parts, ", ")
}

// containersText says how the cluster runs images.
func containersText(runtimes []string) string {
	if len(runtimes) == 0 {
		return "command jobs only (no pyxis, no Apptainer)"
	}
	return "images through " + strings.Join(runtimes, ", ")
}

// clusterGPUs is a cluster's GPUs for the table of machines: "16 (5 free,
// Slurm: 3 nodes)", free counting only nodes that take jobs.
func clusterGPUs(c *slurm.Cluster) string {
	total := 0
	for _, g := range c.GPUs {
		total += g.Total
	}
	return fmt.Sprintf("%d (%d free, Slurm: %s)", total, slurm.FreeGPUs(*c), count(len(c.Nodes), "node"))
}

// clusterRead says when a cluster's figures were read. The card is written
// again only when a read changes something (slurm.Card), so on a live
// cluster its time is the last change, not the last read ("read 6m ago" on
// a cluster read every 5 s); offline, the figures are from then at least.
func clusterRead(read time.Time, online bool, now time.Time) string {
	switch ago := Ago(read, now); {
	case read.IsZero():
		return "not read yet"
	case !online:
		return "last known, read " + ago + " or later"
	case ago == "now":
		return "read just now"
	default:
		return "unchanged for " + strings.TrimSuffix(ago, " ago")
	}
}
