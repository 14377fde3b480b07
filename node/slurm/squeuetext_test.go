package slurm

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var fixedMarkers = textMarkers{Reason: "~00R", Name: "~00N", Comment: "~00E"}

// textFixture reads a text fixture with its placeholders set to m.
func textFixture(t testing.TB, name string, m textMarkers) []byte {
	s := strings.NewReplacer("{R}", m.Reason, "{N}", m.Name, "{E}", m.Comment).Replace(string(readFixture(t, name)))
	return []byte(s)
}

func TestParseSqueueText(t *testing.T) {
	list := ParseSqueueText(textFixture(t, "squeue-22.05-text.txt", fixedMarkers), fixedMarkers)
	jobs := byID(t, list)
	if len(list) != 6 {
		t.Fatalf("%d jobs, want 6: %+v", len(list), list)
	}
	if _, ok := jobs["9999"]; ok {
		t.Error("a job name forged a record")
	}
	tests := []struct {
		id, state, reason, name string
		gpus                    int
		nodes                   []string
		labpool                 string
	}{
		{"1", "RUNNING", "", "run2", 2, []string{"slm-a"}, "j1"},
		{"2", "RUNNING", "", "multi", 2, []string{"slm-a", "slm-b"}, ""},
		{"3", "PENDING", "Resources", "big", 4, nil, "j3"},
		{"5", "PENDING", "JobHeldUser", "evil\n9999|RUNNING|slm-a|root|gpu|N/A|N/A|2026-11-26T05:00:00|2026-11-26T05:00:00|NONE|1|UNLIMITED|1|0|None", 0, nil, ""},
		{"6", "CANCELLED", "Priority", "cancelme", 0, nil, "j6"},
	}
	for _, tt := range tests {
		j := jobs[tt.id]
		if j.State != tt.state || j.Reason != tt.reason || j.Name != tt.name || j.GPUs != tt.gpus ||
			strings.Join(j.Nodes, ",") != strings.Join(tt.nodes, ",") || j.LabpoolJob != tt.labpool {
			t.Errorf("job %s = %+v\nwant %+v", tt.id, j, tt)
		}
	}
	if j := jobs["1"]; j.Started.IsZero() || j.User != "root" || j.Partition != "gpu" {
		t.Errorf("job 1: %+v", j)
	}
	if j := jobs["6"]; j.Ended.IsZero() {
		t.Errorf("cancelled job has no end: %+v", j)
	}
	// With other markers (a later call's), the old ones are text.
	if got := ParseSqueueText(textFixture(t, "squeue-22.05-text.txt", fixedMarkers), newMarkers()); len(got) != 0 {
		t.Errorf("parsed %d jobs with the wrong markers", len(got))
	}
}

func TestTextExit(t *testing.T) {
	for in, want := range map[string][2]int{"0": {0, 0}, "768": {3, 0}, "9": {0, 9}, "3:0": {3, 0}, "0:15": {0, 15}, "x": {0, 0}} {
		if c, s := textExit(in); c != want[0] || s != want[1] {
			t.Errorf("textExit(%q) = %d, %d; want %v", in, c, s, want)
		}
	}
}

// renderStateText prints jobs' state lines as the poll's squeue does.
func renderStateText(jobs []Job, m textMarkers) []byte {
	var b strings.Builder
	for _, j := range jobs {
		reason := j.Reason
		if reason == "" {
			reason = "None"
		}
		fmt.Fprintf(&b, "%s|%s|%s%s\n", j.ID, j.State, reason, m.Comment)
	}
	return []byte(b.String())
}

// renderText prints jobs as the poll's squeue does (for recorded
// executors and benchmarks built from JSON fixtures).
func renderText(jobs []Job, m textMarkers) []byte {
	var b strings.Builder
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "N/A"
		}
		return t.Local().Format("2006-01-02T15:04:05")
	}
	for _, j := range jobs {
		limit := "UNLIMITED"
		if j.TimeLimit > 0 {
			limit = fmt.Sprintf("%d:00", int(j.TimeLimit.Minutes()))
		}
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s|N/A|gres/gpu=%d|%s|%s|%s|%d|%s|%d|%d|%s%s%s%s%s%s\n",
			j.ID, j.State, j.NodeList, j.User, j.Partition, j.GPUs, ts(j.Submitted), ts(j.Started), ts(j.Ended),
			j.NodeCount, limit, j.CPUs, j.ExitCode<<8|j.Signal, j.Reason, m.Reason, j.Name, m.Name, j.Comment, m.Comment)
	}
	return []byte(b.String())
}
