package slurm

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procStat is what /proc/PID/stat says of a process that labpool uses.
type procStat struct {
	comm  string
	ppid  int
	start uint64 // clock ticks after boot: with the PID, names one process over time
}

// readStat reads /proc/PID/stat under root.
func readStat(root string, pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	return parseStat(string(b))
}

// parseStat parses the text of /proc/PID/stat: "PID (COMM) STATE PPID ...",
// COMM holding any byte, ")" included, so the fields are counted from its
// last ")"; the start time is field 22.
func parseStat(s string) (procStat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || ppid < 0 {
		return procStat{}, false
	}
	return procStat{comm: s[open+1 : end], ppid: ppid, start: start}, true
}

// maxAncestors bounds the walk up a process's parents.
const maxAncestors = 64

// stepdAbove finds the slurmstepd that process pid runs under: its nearest
// ancestor named slurmstepd and run by root (a user may name a process
// so, never run it as root). step is the job ID its title names
// ("slurmstepd: [JOB.STEP]"), "" when the title names none.
func stepdAbove(root string, pid int) (step string, found bool) {
	st, ok := readStat(root, pid)
	for n := 0; ok && st.ppid > 1 && n < maxAncestors; n++ {
		pid = st.ppid
		if st, ok = readStat(root, pid); !ok {
			return "", false
		}
		if st.comm == "slurmstepd" && rootOwned(root, pid) {
			b, _ := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "cmdline"))
			return jobInTitle(string(b)), true
		}
	}
	return "", false
}

// jobInTitle is the job ID of a slurmstepd's title, "slurmstepd: [123.0]",
// "[123.batch]", "[123.extern]"; "" when it names none.
func jobInTitle(cmdline string) string {
	t, ok := strings.CutPrefix(strings.TrimRight(cmdline, "\x00 "), "slurmstepd: [")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(t, ".+]"); i >= 0 {
		t = t[:i]
	}
	if !isJobID(t) {
		return ""
	}
	return t
}

// rootOwned says whether process pid runs as root (real user ID 0).
func rootOwned(root string, pid int) bool {
	f, err := os.Open(filepath.Join(root, strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if ids, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			f := strings.Fields(ids)
			return len(f) > 0 && f[0] == "0"
		}
	}
	return false
}
