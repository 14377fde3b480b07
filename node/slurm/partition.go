package slurm

import (
	"strconv"
	"strings"
)

// `scontrol show partition -o` is read as text: sinfo --json of 22.05
// has no partitions, and later versions leave out which is the default.
// Each line is KEY=VALUE pairs separated by spaces.

// ParsePartitions reads `scontrol show partition -o`.
func ParsePartitions(out []byte) []Partition {
	var parts []Partition
	for _, line := range strings.Split(string(out), "\n") {
		kv := keyValues(line)
		name := kv["PartitionName"]
		if name == "" {
			continue
		}
		nodes, _ := ExpandHostlist(kv["Nodes"])
		if kv["Nodes"] == "(null)" {
			nodes = nil
		}
		cpus, _ := strconv.Atoi(kv["TotalCPUs"])
		parts = append(parts, Partition{
			Name:         name,
			Default:      kv["Default"] == "YES",
			State:        strings.ToLower(kv["State"]),
			Nodes:        nodes,
			MaxTimeS:     slurmDuration(kv["MaxTime"]),
			DefaultTimeS: slurmDuration(kv["DefaultTime"]),
			CPUs:         cpus,
		})
	}
	return parts
}

// keyValues splits "A=1 B=x y=z" at spaces into keys and values; a
// value runs to the next " KEY=" (scontrol does not quote values with
// spaces, such as a Comment or a Reason).
func keyValues(line string) map[string]string {
	kv := map[string]string{}
	fields := strings.Fields(line)
	key := ""
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if ok && k != "" && isKey(k) {
			key = k
			kv[key] = v
			continue
		}
		if key != "" {
			kv[key] += " " + f
		}
	}
	return kv
}

// isKey says whether s looks like one of scontrol's keys (letters,
// digits, '/', ':' and '_', starting with a capital).
func isKey(s string) bool {
	if s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '/' || c == ':' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

// slurmDuration reads Slurm's time ("UNLIMITED", "NONE", "30",
// "1:00:00", "2-00:00:00", "5-12") in seconds; 0 for none or unlimited.
func slurmDuration(s string) int64 {
	s = strings.TrimSpace(s)
	switch s {
	case "", "UNLIMITED", "INFINITE", "NONE", "N/A", "Unknown":
		return 0
	}
	days := int64(0)
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			return 0
		}
		days, s = n, rest
		if !strings.Contains(s, ":") {
			s += ":00:00" // "5-12": days and hours
		}
	}
	parts := strings.Split(s, ":")
	var v [3]int64
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || i > 2 {
			return 0
		}
		v[i] = n
	}
	var secs int64
	switch len(parts) {
	case 1: // minutes
		secs = v[0] * 60
	case 2: // minutes:seconds
		secs = v[0]*60 + v[1]
	case 3:
		secs = v[0]*3600 + v[1]*60 + v[2]
	}
	return days*86400 + secs
}
