package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/gpu"
	"github.com/spf13/cobra"
)

func gpusCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "gpus", Short: "List every GPU of the pool with its latest figures, health, job and processes",
		Long: `List every GPU of the pool with its latest figures, health, job and processes,
then the GPUs of each Slurm cluster in the pool by type and node (allocated of
total). --json lists the machines' GPUs; a cluster's are in labpool nodes
--json (cluster.gpus, cluster.nodes[].gpus).`}
	return listVerb(g, c, readGPUs, func(w io.Writer, l gpuListing) error {
		if err := writeGPUsShared(w, l.gpus, shareHolders(l.nodes)); err != nil {
			return err
		}
		return writeClusterGPUs(w, l.nodes)
	})
}

// gpuListing is what gpus shows: the machines' GPUs, and the nodes, for
// the clusters among them. Its JSON is the GPUs.
type gpuListing struct {
	gpus  []app.GPU
	nodes []app.Node
}

func (l gpuListing) MarshalJSON() ([]byte, error) { return json.Marshal(l.gpus) }

func readGPUs(r reader, ctx context.Context) (gpuListing, error) {
	nodes, err := r.Nodes(ctx)
	l := gpuListing{gpus: []app.GPU{}, nodes: nodes}
	for _, n := range nodes {
		l.gpus = append(l.gpus, n.GPUs...)
	}
	return l, err
}

// writeClusterGPUs writes each cluster's GPUs by type, and by node.
func writeClusterGPUs(w io.Writer, nodes []app.Node) error {
	for _, n := range nodes {
		if n.Cluster == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s (Slurm cluster %s): %s\n", n.Name, n.Cluster.Name, gpuCounts(n.Cluster.GPUs))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, cn := range n.Cluster.Nodes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", cn.Name, cn.State, gpuCounts(cn.GPUs))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// gpuCmd is `labpool gpu clear NODE:INDEX`.
func gpuCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "gpu", Short: "Act on one GPU of the pool"}
	clear := &cobra.Command{
		Use:   "clear NODE:INDEX",
		Short: "Lift a GPU's quarantine (owners of the pool and the machine's own user)",
		Long: `Lift the quarantine of a GPU that a critical fault (an XID such as 79,
uncorrectable ECC errors, retired pages or remapped rows pending) kept from
new jobs. The faults seen so far are accepted; a new one quarantines it again.
Only owners of the pool and the machine's own user may.`,
		Args: cobra.ExactArgs(1),
	}
	c.AddCommand(actVerb(g, clear, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		q, err := c.ClearGPU(ctx, args[0])
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("gpu %d of %s cleared (was quarantined: %s)", q.Index, q.NodeName, q.Reason), nil
	}))
	return c
}

func writeGPUs(w io.Writer, gpus []app.GPU) error { return writeGPUsShared(w, gpus, nil) }

// writeGPUsShared is writeGPUs where shared names the holders of each
// shared GPU (by UUID, see shareHolders), said in place of its one job.
func writeGPUsShared(w io.Writer, gpus []app.GPU, shared map[string]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tGPU\tNAME\tUTIL\tMEMORY\tTEMP\tPOWER\tHEALTH\tJOB")
	for _, g := range gpus {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f%%\t%s\t%.0f°C\t%.0f/%.0f W\t%s\t%s\n", g.NodeName, g.Index, g.Name,
			g.UtilPercent, gpuMemory(g), g.TempC, g.PowerW, g.PowerLimitW,
			health(g.Health, g.HealthReason), cmp.Or(shared[g.UUID], jobLabel(g)))
		for _, p := range g.ProcessList {
			fmt.Fprintf(tw, "\t\t  pid %d\t\t%s\t\t\t\t%s\n", p.PID, Bytes(p.MemBytes), processOwner(g, p))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeTopology(w, gpus)
}

// gpuMemory is a GPU's memory, used/total; "unified" where it is the
// system's (a GB10, DGX Spark), which the node's host memory shows too.
func gpuMemory(g app.GPU) string {
	m := Bytes(g.MemUsedBytes) + "/" + Bytes(g.MemTotalBytes)
	if g.MemUnified {
		m += " unified"
	}
	return m
}

// health is a GPU's health with its reason: "quarantined: XID 79 (...)".
func health(state, reason string) string {
	switch {
	case state == "":
		return "-"
	case reason == "":
		return state
	}
	return state + ": " + reason
}

// jobLabel names the job holding a GPU for a person: "train-bert (alice)",
// or the job's short ID while its record has not reached this machine;
// "-" when the GPU is free. A Slurm job says so: "slurm job 123", "train-bert
// (alice, slurm job 123)".
func jobLabel(g app.GPU) string {
	switch {
	case g.Job == "" && g.Holder != "":
		return g.Holder
	case g.Job == "":
		return "-"
	case g.JobName == "":
		return shortJob(g.Job)
	case g.Holder != "":
		return fmt.Sprintf("%s (%s, %s)", g.JobName, g.JobOwnerName, g.Holder)
	}
	return fmt.Sprintf("%s (%s)", g.JobName, g.JobOwnerName)
}

// processOwner says whose a GPU process is: "job NAME (owner)", or
// "outside labpool".
func processOwner(g app.GPU, p app.GPUProcess) string {
	switch {
	case p.Job == "" && p.Holder != "":
		return p.Holder // a Slurm job labpool did not launch
	case p.Job == "":
		return "outside labpool"
	case p.Job == g.Job && g.JobName != "":
		return "job " + jobLabel(g)
	}
	return "job " + shortJob(p.Job)
}

// writeJobProcesses lists a job's processes on one GPU (labpool stats).
func writeJobProcesses(w io.Writer, ps []gpu.Process) {
	for _, p := range ps {
		fmt.Fprintf(w, "  pid %d  %s\n", p.PID, Bytes(p.MemBytes))
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
