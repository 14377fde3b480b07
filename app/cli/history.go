package cli

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/spf13/cobra"
)

func historyCmd(g *globals) *cobra.Command {
	var (
		gpu           int
		since         string
		asJSON, asCSV bool
	)
	c := &cobra.Command{
		Use:   "history NODE",
		Short: "Print a machine's (or one GPU's) figures over time: min, mean and max of each",
		Long: "Print the history of a machine's host figures, or of one of its GPUs with --gpu, over the\n" +
			"last --since (e.g. 90s, 2h, 7d, 1y): a row per point, with the lowest, mean and highest\n" +
			"value of each figure over the point's period (one value where they agree).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := parseSince(since)
			if err != nil {
				return usageError{err}
			}
			if asJSON && asCSV {
				return usageError{fmt.Errorf("--json and --csv exclude each other")}
			}
			r, done, err := open(cmd.Context(), g, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			node, err := findNode(cmd.Context(), r, args[0])
			if err != nil {
				return err
			}
			q := app.SeriesQuery{Node: node, Since: int(d / time.Second)}
			if cmd.Flags().Changed("gpu") {
				q.GPU = &gpu
			}
			s, err := readSeries(cmd.Context(), r, q)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(cmd.OutOrStdout(), s)
			case asCSV:
				return writeSeriesCSV(cmd.OutOrStdout(), s)
			}
			return writeSeries(cmd.OutOrStdout(), s)
		},
	}
	c.Flags().IntVar(&gpu, "gpu", 0, "GPU index (default: the host's figures)")
	c.Flags().StringVar(&since, "since", "1h", "how far back: a duration such as 90s, 2h, 7d or 1y")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&asCSV, "csv", false, "print CSV: time, then NAME_min, NAME_mean, NAME_max of each figure")
	return c
}

// parseSince reads a duration, also in days (d) and years (y, 365 days).
func parseSince(s string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "y": 365 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil || f <= 0 {
				return 0, fmt.Errorf("--since %q: want a duration such as 90s, 2h, 7d or 1y", s)
			}
			return time.Duration(f * float64(unit)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("--since %q: want a duration such as 90s, 2h, 7d or 1y", s)
	}
	return d, nil
}

// findNode returns the ID of the node named, or whose ID or short ID is,
// ref.
func findNode(ctx context.Context, r reader, ref string) (string, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.ID == ref || n.ShortID == ref || n.Name == ref {
			return n.ID, nil
		}
	}
	return "", fmt.Errorf("no machine %q in the pool: see `labpool nodes`", ref)
}

// readSeries asks the daemon, or reads the replica when none runs.
func readSeries(ctx context.Context, r reader, q app.SeriesQuery) (app.Series, error) {
	sr, ok := r.(interface {
		Series(context.Context, app.SeriesQuery) (app.Series, error)
	})
	if !ok {
		return app.Series{}, fmt.Errorf("read history: this reader has no history")
	}
	return sr.Series(ctx, q)
}

// headers of the figures in the table, by metric name.
var seriesHeaders = map[string]string{
	"util_percent": "UTIL %", "mem_util_percent": "MEM BUSY %", "mem_used_bytes": "MEM USED", "temp_c": "TEMP °C",
	"power_w": "POWER W", "sm_clock_mhz": "SM MHZ", "mem_clock_mhz": "MEM MHZ", "cpu_percent": "CPU %",
	"net_rx_bps": "RX/S", "net_tx_bps": "TX/S", "disk_used_percent": "DISK %",
}

// writeSeries prints a row per point: its time and each figure as
// min/mean/max (one value where they agree).
func writeSeries(w io.Writer, s app.Series) error {
	if len(s.Times) == 0 {
		_, err := fmt.Fprintln(w, "no history in this window")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"TIME"}
	for _, m := range s.Metrics {
		head = append(head, seriesHeaders[m.Name])
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	layout := "2006-01-02 15:04:05"
	if s.StepSeconds >= 60 {
		layout = "2006-01-02 15:04"
	}
	for i, t := range s.Times {
		row := []string{time.Unix(t, 0).Local().Format(layout)}
		for _, m := range s.Metrics {
			row = append(row, figure(m, i))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s of %s (min/mean/max over each)\n", count(len(s.Times), "point"), s.Tier)
	return err
}

func figure(m app.Metric, i int) string {
	f := func(v float64) string {
		switch m.Unit {
		case "B":
			return Bytes(uint64(max(0, v)))
		case "B/s":
			return Bytes(uint64(max(0, v))) + "/s"
		case "MHz":
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	lo, mean, hi := f(m.Min[i]), f(m.Mean[i]), f(m.Max[i])
	if lo == hi {
		return mean
	}
	return lo + "/" + mean + "/" + hi
}

func writeSeriesCSV(w io.Writer, s app.Series) error {
	cw := csv.NewWriter(w)
	head := []string{"time"}
	for _, m := range s.Metrics {
		head = append(head, m.Name+"_min", m.Name+"_mean", m.Name+"_max")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for i, t := range s.Times {
		row := []string{time.Unix(t, 0).UTC().Format(time.RFC3339)}
		for _, m := range s.Metrics {
			for _, v := range []float64{m.Min[i], m.Mean[i], m.Max[i]} {
				row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
