package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/labpool/labpool/app"
)

// writeTopology writes, per machine that knows it, its GPU matrix as
// `nvidia-smi topo -m` does (NV# for NVLink links, else the PCIe relation)
// and its GPUs' MIG mode and instances.
func writeTopology(w io.Writer, gpus []app.GPU) error {
	for _, node := range byNode(gpus) {
		if err := writeMatrix(w, node); err != nil {
			return err
		}
		if err := writeMIG(w, node); err != nil {
			return err
		}
	}
	return nil
}

// byNode groups gpus by machine, in the order they come.
func byNode(gpus []app.GPU) [][]app.GPU {
	var out [][]app.GPU
	at := map[string]int{}
	for _, g := range gpus {
		i, ok := at[g.Node+"\x00"+g.NodeName]
		if !ok {
			i = len(out)
			at[g.Node+"\x00"+g.NodeName] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], g)
	}
	return out
}

// writeMatrix writes one machine's GPU matrix; nothing when none of its
// GPUs knows a link.
func writeMatrix(w io.Writer, gpus []app.GPU) error {
	known := false
	for _, g := range gpus {
		known = known || len(g.Links) > 0
	}
	if !known || len(gpus) < 2 {
		return nil
	}
	fmt.Fprintf(w, "\n%s topology (NV#: NVLink links; PIX, PXB, PHB, NODE, SYS: PCIe, nearest first):\n", gpus[0].NodeName)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{""}
	for _, g := range gpus {
		head = append(head, "GPU"+strconv.Itoa(g.Index))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, g := range gpus {
		row := []string{"GPU" + strconv.Itoa(g.Index)}
		for _, o := range gpus {
			row = append(row, linkText(g, o))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// linkText is how g reaches o: "X" (itself), "NV18", "PIX", or "-".
func linkText(g, o app.GPU) string {
	if g.Index == o.Index {
		return "X"
	}
	for _, l := range g.Links {
		switch {
		case l.Peer != o.Index:
		case l.NVLinks > 0:
			return "NV" + strconv.Itoa(l.NVLinks)
		case l.PCIe != "":
			return l.PCIe
		}
	}
	return "-"
}

// writeMIG writes the MIG mode of one machine's GPUs that have MIG, and
// each instance a job may be granted by UUID (`labpool run --gpu-ids`).
func writeMIG(w io.Writer, gpus []app.GPU) error {
	var off []string
	var lines []string
	for _, g := range gpus {
		m := g.MIG
		switch {
		case m == nil:
			continue
		case !m.Enabled:
			s := strconv.Itoa(g.Index)
			if m.Pending {
				s += " (on after a reset)"
			}
			off = append(off, s)
			continue
		}
		mode := "on"
		if m.Pending {
			mode = "on (off after a reset)"
		}
		lines = append(lines, fmt.Sprintf("  GPU %d: MIG %s, %s", g.Index, mode, count(len(m.Instances), "instance")))
		for _, in := range m.Instances {
			lines = append(lines, fmt.Sprintf("    %s  %s  %s  (GPU instance %d, compute instance %d)",
				in.UUID, orDash(in.Name), Bytes(in.MemTotalBytes), in.GPUInstance, in.ComputeInstance))
		}
	}
	if len(off) == 0 && len(lines) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s MIG:\n", gpus[0].NodeName)
	if len(off) > 0 {
		lines = append([]string{"  MIG supported, off: GPUs " + strings.Join(off, ", ")}, lines...)
	}
	_, err := fmt.Fprintln(w, strings.Join(lines, "\n"))
	return err
}
