package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

// writePlan writes what `run --dry-run` found: where the job would run and
// why, what a cluster's sbatch would be asked, and what each machine has;
// or, where no machine fits, why not, a line per machine.
func writePlan(w io.Writer, p app.Plan) {
	switch {
	case p.Node == "":
		fmt.Fprintln(w, p.Reason) // "no machine fits:", then a line per machine
		return
	case !p.Fits:
		fmt.Fprintf(w, "does not fit on %s: %s\n", p.NodeName, p.Reason)
	default:
		fmt.Fprintf(w, "would run on %s: %s\n", p.NodeName, p.Reason)
	}
	if c := p.Cluster; c != nil {
		fmt.Fprintln(w, "  "+c.Command)
		switch {
		case c.StartsNow:
			fmt.Fprintf(w, "  starts now on %s\n", strings.Join(c.Nodes, ", "))
		case c.Fits:
			fmt.Fprintf(w, "  queues; nodes that can run it: %s\n", strings.Join(c.Nodes, ", "))
		}
	}
	if len(p.Picked) > 0 {
		fmt.Fprintf(w, "  GPUs %s\n", ints(p.Picked))
	}
	if p.Suggestion != nil {
		fmt.Fprintln(w, "  last run "+p.Suggestion.Text)
	}
	if len(p.Nodes) < 2 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tFITS\tWHY")
	for _, np := range p.Nodes {
		fits := "no"
		if np.Fits {
			fits = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", np.NodeName, fits, np.Reason)
	}
	tw.Flush()
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// stateReasonMax is the longest reason a queued job's STATE holds
// ("queued (Resources)"); a longer one goes on its own line (waitReason).
const stateReasonMax = 24

// waitReason is where a queued job waits and why, in one sentence, for a
// line of its own under the job in ps (STATE stays short): a job queued by
// labpool, or one whose scheduler's reason is long; "" for a job queued by
// a cluster's scheduler whose short reason ("Resources") stays in STATE.
func waitReason(j jobs.Job) string {
	if j.State != jobs.Queued || j.Error == "" {
		return ""
	}
	if j.Executor != "" && j.Executor != "docker" && utf8.RuneCountInString(stateReason(j)) <= stateReasonMax {
		return "" // "queued (Resources)", or "queued" where the scheduler gave no reason
	}
	return j.Error
}

// stateReason is a cluster-queued job's reason as STATE gives it: the
// scheduler's own word ("Resources").
func stateReason(j jobs.Job) string {
	if j.Error == "queued by the cluster's scheduler" {
		return ""
	}
	if r, ok := strings.CutPrefix(j.Error, "queued by the cluster's scheduler: "); ok {
		return r
	}
	return j.Error
}

// cutText is s cut to at most n characters, ending in "…" where it was cut.
func cutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// jobState is where a job is, for people: "queued (Resources)", "running",
// "exited 3", "cancelled", "timed out"; a job whose container the engine
// restarted (--restart on-failure) says how often: "running, restarted 2×".
func jobState(j jobs.Job) string {
	if j.State == jobs.Queued || j.Restarts <= 0 {
		return endState(j)
	}
	return fmt.Sprintf("%s, restarted %d×", endState(j), j.Restarts)
}

// endState is jobState without the restarts.
func endState(j jobs.Job) string {
	switch j.State {
	case jobs.Queued:
		if r := stateReason(j); r != "" && waitReason(j) == "" {
			return "queued (" + r + ")"
		}
		return "queued"
	case jobs.Exited, jobs.Failed:
	default:
		return string(j.State)
	}
	switch j.Outcome {
	case "cancelled":
		return "cancelled"
	case "timed_out":
		return "timed out"
	case "oom":
		return "killed: out of memory"
	case "node_fail":
		return "failed: a node failed"
	case "":
	default:
		return strings.ReplaceAll(j.Outcome, "_", " ")
	}
	if j.ExitCode != nil {
		return fmt.Sprintf("exited %d", *j.ExitCode)
	}
	if j.Error != "" {
		return string(j.State) + ": " + j.Error
	}
	return string(j.State)
}

// onlyNode is the plans of nodes for the machine id alone: a plan for a
// machine named lists no other.
func onlyNode(nodes []app.NodePlan, id string) []app.NodePlan {
	for _, np := range nodes {
		if np.Node == id {
			return []app.NodePlan{np}
		}
	}
	return nil
}

// planner plans a launch (the daemon's web.Client).
type planner interface {
	Plan(ctx context.Context, req app.LaunchRequest) (app.Plan, error)
}

// noFitHint is why req fits nowhere (msg), then what to do: add --queue
// where the job would wait for busy GPUs with it (the daemon's plan with
// --queue says so), or know that it would not help; a launch is told of
// --dry-run too.
func noFitHint(ctx context.Context, pl planner, req app.LaunchRequest, msg string, dryRun bool) string {
	seeAll := "; labpool run --dry-run shows each machine"
	if dryRun {
		seeAll = ""
	}
	if req.Spec.Queue {
		return msg + "\nno machine has what it asks, even once its GPUs are free" + seeAll
	}
	req.Spec.Queue = true
	p, err := pl.Plan(ctx, req)
	switch {
	case err != nil:
		return msg
	case p.Fits:
		return msg + "\nadd --queue to wait for busy GPUs: it would wait on " + p.NodeName
	}
	return msg + "\n--queue would not help: no machine has what it asks, even once its GPUs are free" + seeAll
}
