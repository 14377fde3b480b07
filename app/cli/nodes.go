package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/spf13/cobra"
)

func nodesCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "nodes", Short: "List the machines of the pool, this one included"}
	return listVerb(g, c, reader.Nodes, func(w io.Writer, nodes []app.Node) error { return writeNodes(w, nodes, time.Now()) })
}

func writeNodes(w io.Writer, nodes []app.Node, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tSTATE\tOS\tCPU\tMEMORY\tGPUS\tLAST SEEN")
	for _, n := range nodes {
		cpu, mem := "-", "-"
		if n.Host != nil {
			cpu = fmt.Sprintf("%.0f%%", n.Host.CPUPercent)
			mem = fmt.Sprintf("%s/%s", Bytes(n.Host.MemUsedBytes), Bytes(n.Host.MemTotalBytes))
		}
		gpus := fmt.Sprint(len(n.GPUs))
		switch {
		case n.Cluster != nil:
			gpus = clusterGPUs(n.Cluster)
		case len(n.GPUs) == 0 && n.GPUError != "":
			gpus = "0 (" + n.GPUError + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.ShortID, state(n)+nodeLendNote(n.Lend, now), osArch(n.Info), cpu, mem, gpus, Ago(n.LastSeen, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeClusters(w, nodes, now)
}

// osArch names a machine's OS and architecture for people: "macOS/arm64";
// "-" where its agent does not say.
func osArch(i app.NodeInfo) string {
	if i.GOOS == "" {
		return "-"
	}
	name := map[string]string{"darwin": "macOS", "windows": "Windows", "linux": "linux"}[i.GOOS]
	if name == "" {
		name = i.GOOS
	}
	if i.Arch == "" {
		return name
	}
	return name + "/" + i.Arch
}

func state(n app.Node) string {
	switch {
	case n.Self:
		return "this machine"
	case n.Online:
		return "online"
	}
	return "offline"
}

// Bytes formats a byte count with a binary unit.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Ago says how long ago t was, for people.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 2*time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// bar draws a meter of width cells for pct in [0, 100].
func bar(pct float64, width int) string {
	pct = max(0, min(100, pct))
	full := int(pct / 100 * float64(width))
	return strings.Repeat("█", full) + strings.Repeat("░", width-full)
}
