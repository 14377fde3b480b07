package app

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds of the reason a plan gives when no machine fits (noFitReason): a
// headline, a line per machine up to refusalMachines of them, each cut at
// refusalWidth characters, and one line for the machines that run no
// containers at all.
const (
	refusalMachines = 12
	refusalWidth    = 160
)

// refusal is why one online machine does not take a job.
type refusal struct {
	name, why string
	// noEngine: the machine, without GPUs, cannot run containers at all
	// (a laptop without Docker); such machines share one line, last. A
	// GPU machine whose engine fails keeps a line of its own, the error in
	// it.
	noEngine bool
}

// refusalOf is why the online machine n, planned as np, refuses spec.
func refusalOf(n Node, np NodePlan) refusal {
	return refusal{name: n.Name, why: np.Reason, noEngine: n.Cluster == nil && len(n.GPUs) == 0 && !n.Containers && n.ContainersError != ""}
}

// noFitReason is the plan's reason when no machine fits: "no machine
// fits:", then a line per online machine that could run containers, then
// one line naming those that cannot run containers at all (their engines'
// errors are in labpool nodes). Each line is one line and bounded: names
// and reasons come from other machines.
func noFitReason(refused []refusal) string {
	if len(refused) == 0 {
		return "no machine fits: none is online"
	}
	lines := []string{"no machine fits:"}
	var noEngine []string
	more := 0
	for _, r := range refused {
		switch {
		case r.noEngine:
			noEngine = append(noEngine, oneLine(r.name))
		case len(lines) > refusalMachines:
			more++
		default:
			lines = append(lines, "  "+cut(oneLine(r.name)+": "+oneLine(r.why), refusalWidth))
		}
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("  and %d more machines", more))
	}
	if len(noEngine) > 0 {
		lines = append(lines, "  "+cut("cannot run containers (labpool nodes says why): "+strings.Join(noEngine, ", "), refusalWidth))
	}
	return strings.Join(lines, "\n")
}

// oneLine is s with every run of white space (newlines, tabs) one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cut is s cut to at most n characters, ending in "…" where it was cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
