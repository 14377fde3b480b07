package slurm

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// The queue is polled as text: `squeue --json` costs Slurm 22.05 about
// 160 ms of CPU for 1,000 jobs (and 22.05 ignores --jobs and --user with
// --json), the full records below about 10 ms, and the state lines that
// a tick reads first about 8 ms (BenchmarkPoll1000Real, statelines.go).
//
// Text is read safely although a job's name and comment are anything its
// owner typed, newlines and '|' included: the free fields (reason, name,
// comment) come last, each ended by a marker made of a random nonce that
// is new on every call, and a record ends with the comment's marker and
// a newline. A name cannot forge a record without guessing the nonce.

// textFields are the fixed fields, in order, each followed by '|'; then
// come Reason, Name and Comment, each followed by its marker.
var textFields = []string{"JobID", "State", "NodeList", "UserName", "Partition", "tres-per-node",
	"tres-alloc", "SubmitTime", "StartTime", "EndTime", "NumNodes", "TimeLimit", "NumCPUs", "exit_code"}

// textMarkers ends the free fields of one squeue call.
type textMarkers struct{ Reason, Name, Comment string }

// newMarkers makes markers from a fresh nonce. Each starts with '~' (so
// that squeue does not read it as a field width) and holds no ',' or ':'.
func newMarkers() textMarkers {
	var b [8]byte
	_, _ = rand.Read(b[:])
	n := "~" + hex.EncodeToString(b[:])
	return textMarkers{Reason: n + "R", Name: n + "N", Comment: n + "E"}
}

// squeueTextArgs are squeue's arguments for full records. --sort= spares
// squeue its sort (a seventh of its work for 1,000 jobs): the reader keys
// jobs by ID.
func squeueTextArgs(m textMarkers) []string {
	f := make([]string, 0, len(textFields)+3)
	for _, name := range textFields {
		f = append(f, name+":|")
	}
	f = append(f, "Reason:"+m.Reason, "Name:"+m.Name, "Comment:"+m.Comment)
	return []string{"--noheader", "--states=all", "--Format=" + strings.Join(f, ","), "--sort="}
}

// ParseSqueueText reads the poll's output made with markers m. A record
// that is not a job (fields missing, an ID that is not digits, a state
// that is not capitals) is skipped, and so is every record of an ID
// printed twice.
func ParseSqueueText(out []byte, m textMarkers) []Job {
	recs := strings.Split(string(out), m.Comment+"\n")
	list := make([]Job, 0, len(recs))
	seen := make(map[string]int, len(recs))
	for _, rec := range recs {
		j, ok := textJob(rec, m)
		if !ok {
			continue
		}
		seen[j.ID]++
		list = append(list, j)
	}
	kept := list[:0]
	for _, j := range list {
		if seen[j.ID] == 1 {
			kept = append(kept, j)
		}
	}
	return kept
}

// textJob reads one record.
func textJob(rec string, m textMarkers) (Job, bool) {
	fixed, rest, ok := strings.Cut(rec, m.Reason)
	if !ok {
		return Job{}, false
	}
	name, comment, ok := strings.Cut(rest, m.Name)
	if !ok || strings.Contains(comment, m.Name) {
		return Job{}, false
	}
	f := strings.SplitN(fixed, "|", len(textFields)+1)
	if len(f) != len(textFields)+1 || !validHandle(f[0]) || !isState(f[1]) {
		return Job{}, false
	}
	j := Job{ID: f[0], State: f[1], NodeList: nullText(f[2]), User: f[3], Partition: f[4],
		Reason: f[14], Name: name, Comment: nullText(comment)}
	if j.Reason == "None" {
		j.Reason = ""
	}
	j.NodeCount, _ = strconv.Atoi(f[10])
	j.CPUs, _ = strconv.Atoi(f[12])
	j.Submitted = scontrolTime(f[7])
	if j.State != "PENDING" {
		j.Started = scontrolTime(f[8])
	}
	if Ended(j.State) {
		j.Ended = scontrolTime(f[9])
	}
	if s := slurmDuration(f[11]); s > 0 {
		j.TimeLimit = time.Duration(s) * time.Second
	}
	j.ExitCode, j.Signal = textExit(f[13])
	j.Nodes, _ = ExpandHostlist(j.NodeList)
	j.GPUs = gpuTotal(nullText(f[6]))
	if j.GPUs == 0 {
		j.GPUs = gpuTotal(nullText(f[5])) * max(1, j.NodeCount)
	}
	j.LabpoolJob, j.Owner = ParseComment(j.Comment)
	return j, true
}

// textExit reads an exit as squeue prints it: the raw wait status (22.05:
// 768 is exit 3, 9 is signal 9) or "code:signal".
func textExit(s string) (code, signal int) {
	if c, sig, ok := strings.Cut(s, ":"); ok {
		code, _ = strconv.Atoi(c)
		signal, _ = strconv.Atoi(sig)
		return code, signal
	}
	raw, err := strconv.Atoi(s)
	if err != nil {
		return 0, 0
	}
	return (raw >> 8) & 0xff, raw & 0x7f
}

func isState(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// nullText is "" for Slurm's placeholders.
func nullText(s string) string {
	switch s {
	case "N/A", "(null)", "NONE", "":
		return ""
	}
	return s
}
