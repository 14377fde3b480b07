package slurm

import (
	"strconv"
	"strings"
	"time"
)

// `scontrol show job -o` and `scontrol show node -o` are read as text:
// they answer on every version, and scontrol still knows a job for a
// while after squeue's snapshot lost it.

// ParseScontrolJobs reads `scontrol show job -o [ID]`, one job a line.
// A job's name is printed unquoted and may hold " Key=value": keys that
// scontrol prints after JobName take their last value, which is the
// real one, and JobId is read from the start of the line.
func ParseScontrolJobs(out []byte) []Job {
	var list []Job
	for _, line := range strings.Split(string(out), "\n") {
		id, ok := strings.CutPrefix(strings.TrimSpace(line), "JobId=")
		if !ok {
			continue
		}
		if i := strings.IndexByte(id, ' '); i >= 0 {
			id = id[:i]
		}
		kv := keyValues(line)
		j := Job{
			ID:        id,
			Name:      kv["JobName"],
			Partition: kv["Partition"],
			State:     kv["JobState"],
			Reason:    kv["Reason"],
			NodeList:  kv["NodeList"],
			Comment:   kv["Comment"],
			Output:    kv["StdOut"],
		}
		j.User, _, _ = strings.Cut(kv["UserId"], "(")
		if j.Reason == "None" {
			j.Reason = ""
		}
		if j.NodeList == "(null)" {
			j.NodeList = ""
		}
		code, sig, _ := strings.Cut(kv["ExitCode"], ":")
		j.ExitCode, _ = strconv.Atoi(code)
		j.Signal, _ = strconv.Atoi(sig)
		j.NodeCount, _ = strconv.Atoi(kv["NumNodes"])
		j.CPUs, _ = strconv.Atoi(kv["NumCPUs"])
		j.Submitted = scontrolTime(kv["SubmitTime"])
		if j.State != "PENDING" {
			j.Started = scontrolTime(kv["StartTime"])
		}
		if Ended(j.State) {
			j.Ended = scontrolTime(kv["EndTime"])
		}
		if s := slurmDuration(kv["TimeLimit"]); s > 0 {
			j.TimeLimit = time.Duration(s) * time.Second
		}
		j.Nodes, _ = ExpandHostlist(j.NodeList)
		j.GPUs = gpuTotal(kv["TRES"])
		if j.GPUs == 0 {
			j.GPUs = gpuTotal(kv["TresPerNode"]) * max(1, j.NodeCount)
		}
		j.LabpoolJob, j.Owner = ParseComment(j.Comment)
		list = append(list, j)
	}
	return list
}

// scontrolTime reads scontrol's local time ("2026-11-26T05:00:16").
func scontrolTime(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, time.Local)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// ParseNodeAddrs reads `scontrol show node -o`: each node's NodeAddr.
func ParseNodeAddrs(out []byte) map[string]string {
	addrs := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		kv := keyValues(line)
		if n := kv["NodeName"]; n != "" {
			addrs[n] = kv["NodeAddr"]
		}
	}
	return addrs
}
