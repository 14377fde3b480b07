package slurm

import (
	"strings"
	"testing"
)

// FuzzProcParsers feeds the /proc and slurm.conf parsers arbitrary text:
// none panics, and a job ID any of them returns is a Slurm job ID.
func FuzzProcParsers(f *testing.F) {
	for _, s := range []string{cgroupV1, cgroupV1Node, cgroupV2, cgroupV2Node, cgroupDocker,
		"slurmstepd: [555.batch]", "100 (a) b) S 1 " + strings.Repeat("0 ", 18) + "7",
		"SLURM_JOB_ID=5\x00SLURM_CLUSTER_NAME=x\x00", "ClusterName=lab # c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, id := range []string{jobInCgroup(s), jobInTitle(s)} {
			if id != "" && !isJobID(id) {
				t.Errorf("parsed job ID %q from %q", id, s)
			}
		}
		if st, ok := parseStat(s); ok && st.ppid < 0 {
			t.Errorf("parseStat(%q): ppid %d", s, st.ppid)
		}
		for k := range parseEnviron([]byte(s)) {
			if !strings.HasPrefix(k, "SLURM_") {
				t.Errorf("parseEnviron(%q) kept %q", s, k)
			}
		}
		if c := clusterInLine(s); strings.ContainsAny(c, " \t#") {
			t.Errorf("clusterInLine(%q) = %q", s, c)
		}
	})
}
