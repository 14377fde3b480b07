package cli

import (
	"cmp"
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

func reportCmd(g *globals) *cobra.Command {
	var (
		since, by     string
		asJSON, asCSV bool
	)
	c := &cobra.Command{
		Use:   "report",
		Short: "Where the pool's GPU hours and energy went: per member, device, machine, GPU or job",
		Long: "Print GPU hours granted to jobs, used (weighed by utilization), idle while granted (under 5%),\n" +
			"unmeasured (granted with no sample), reserved but unused by the reserving member's jobs, and\n" +
			"energy in kWh (from NVML's energy counter where the GPU has one, else power over time: the\n" +
			"SOURCE column says which) over the last --since, grouped --by member (a person: the sum of\n" +
			"their devices), device (each device of a person), node, gpu or job.\n" +
			"GPU hours count whole GPUs, GPU shares and MIG instances as their fraction of a GPU, and a\n" +
			"Slurm cluster's jobs as their GPUs × time held; the legend under the table says so. A record\n" +
			"claiming more than a GPU or a cluster has is cut to it, and listed with the rule.\n" +
			"Every member may read it; it shows no job's environment or command.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseSince(since)
			if err != nil {
				return usageError{err}
			}
			if asJSON && asCSV {
				return usageError{fmt.Errorf("--json and --csv exclude each other")}
			}
			switch by {
			case app.ReportByMember, app.ReportByDevice, app.ReportByNode, app.ReportByGPU, app.ReportByJob:
			default:
				return usageError{fmt.Errorf("--by %q: want member, device, node, gpu or job", by)}
			}
			req := app.ReportRequest{Since: int(d / time.Second), By: by}
			r, done, err := open(cmd.Context(), g, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			rep, err := readReport(cmd.Context(), r, req)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(cmd.OutOrStdout(), rep)
			case asCSV:
				return writeReportCSV(cmd.OutOrStdout(), rep)
			}
			return writeReport(cmd.OutOrStdout(), rep)
		},
	}
	c.Flags().StringVar(&since, "since", "7d", "how far back: a duration such as 12h, 7d or 30d")
	c.Flags().StringVar(&by, "by", app.ReportByMember, "group by member (a person), device, node, gpu or job")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&asCSV, "csv", false, "print CSV, one row per member, device, machine, GPU or job, then the totals")
	return c
}

// readReport asks the daemon, or reads the replica when none runs.
func readReport(ctx context.Context, r reader, req app.ReportRequest) (app.Report, error) {
	rr, ok := r.(interface {
		Report(context.Context, app.ReportRequest) (app.Report, error)
	})
	if !ok {
		return app.Report{}, fmt.Errorf("report: this reader cannot compute reports")
	}
	return rr.Report(ctx, req)
}

var reportHeader = []string{"GPU H GRANTED", "GPU H USED", "IDLE H", "UNMEASURED H", "RESERVED UNUSED H", "KWH", "KWH ALL", "SOURCE"}

func writeReport(w io.Writer, rep app.Report) error {
	fmt.Fprintf(w, "%s to %s, by %s (samples of %ds)\n", rep.Since.Local().Format("2006-01-02 15:04"),
		rep.Until.Local().Format("2006-01-02 15:04"), rep.By, rep.StepSeconds)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t", reportKeyHeader(rep.By))
	for _, h := range reportHeader {
		fmt.Fprintf(tw, "%s\t", h)
	}
	fmt.Fprintln(tw)
	for _, row := range append(rep.Rows, rep.Totals) {
		fmt.Fprintf(tw, "%s\t", row.Label)
		for _, f := range reportFigures(row) {
			fmt.Fprintf(tw, "%s\t", f)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Columns) > 0 {
		fmt.Fprintf(w, "Counted: %s.\n", app.ReportLegend(rep.Columns))
	}
	for _, a := range rep.Adjusted {
		fmt.Fprintf(w, "Cut by rule %q: %s of %s: %s\n", a.Rule, a.Job, cmp.Or(a.NodeName, "the pool"), a.Detail)
	}
	if more := rep.AdjustedCount - len(rep.Adjusted); more > 0 {
		fmt.Fprintf(w, "(%d more cut; --json lists the first %d)\n", more, len(rep.Adjusted))
	}
	return nil
}

func reportKeyHeader(by string) string {
	switch by {
	case app.ReportByNode:
		return "MACHINE"
	case app.ReportByGPU:
		return "GPU"
	case app.ReportByJob:
		return "JOB"
	case app.ReportByDevice:
		return "DEVICE"
	}
	return "MEMBER"
}

func reportFigures(r app.ReportRow) []string {
	src := r.EnergySource
	if src == "" {
		src = "-"
	}
	return []string{hours(r.GPUHoursGranted), hours(r.GPUHoursUsed), hours(r.IdleGrantedHours), hours(r.UnmeasuredHours), hours(r.ReservedUnusedHours),
		strconv.FormatFloat(r.EnergyKWh, 'f', 2, 64), strconv.FormatFloat(r.EnergyTotalKWh, 'f', 2, 64), src}
}

func hours(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }

// writeReportCSV writes full-precision figures: a row per key, then the
// totals (key empty, label "total").
func writeReportCSV(w io.Writer, rep app.Report) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"key", "label", "gpu_hours_granted", "gpu_hours_used", "idle_granted_hours", "unmeasured_hours",
		"energy_kwh", "energy_total_kwh", "energy_source", "reserved_unused_hours"})
	for _, r := range append(rep.Rows, rep.Totals) {
		f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		cw.Write([]string{r.Key, cell(r.Label), f(r.GPUHoursGranted), f(r.GPUHoursUsed), f(r.IdleGrantedHours), f(r.UnmeasuredHours),
			f(r.EnergyKWh), f(r.EnergyTotalKWh), r.EnergySource, f(r.ReservedUnusedHours)})
	}
	cw.Flush()
	return cw.Error()
}

// cell keeps a name a peer chose (a job's, a machine's) from reading as a
// formula when the CSV is opened in a spreadsheet.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
