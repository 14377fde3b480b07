package slurm

import (
	"bytes"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Which Slurm job a process of a compute node runs in, read from /proc.
//
// Where Slurm tracks jobs with cgroups (proctrack/cgroup, task/cgroup),
// the process's cgroup names the job (see jobInCgroup); a process cannot
// leave it, for the cgroups are root's. Where it tracks them by process
// ancestry (proctrack/linuxproc), the job's environment says SLURM_JOB_ID
// and SLURM_CLUSTER_NAME; an environment is the process's own to write, so
// it counts only under a slurmstepd owned by root whose title names the
// same job (rule "slurm job id matches its slurmstepd"): a job cannot pass
// its GPU processes off as another job's. For the same reason the local
// slurm.conf's ClusterName, where there is one, wins over the
// environment's SLURM_CLUSTER_NAME (see Procs.JobOf).

// JobOfProcess says which Slurm job process pid runs in, reading the proc
// filesystem at root ("/proc" on a host): the cluster's name (the
// SLURM_CLUSTER_NAME of the job's environment; "" when the cgroup names
// only the job and the environment says nothing: see Procs for the local
// slurm.conf) and Slurm's job ID. ok is false for a process in no Slurm
// job, or gone.
func JobOfProcess(root string, pid int) (clusterName, jobID string, ok bool) {
	dir := filepath.Join(root, strconv.Itoa(pid))
	env := readEnviron(filepath.Join(dir, "environ"))
	if b, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
		if id := jobInCgroup(string(b)); id != "" {
			return env["SLURM_CLUSTER_NAME"], id, true
		}
	}
	id := env["SLURM_JOB_ID"]
	if !isJobID(id) {
		return "", "", false
	}
	step, found := stepdAbove(root, pid)
	if !found || (step != "" && step != id) {
		return "", "", false // rule "slurm job id matches its slurmstepd"
	}
	return env["SLURM_CLUSTER_NAME"], id, true
}

// jobInCgroup returns the Slurm job ID named in the text of a
// /proc/PID/cgroup file, or "". Slurm's layouts:
//
//	cgroup v1: /slurm/uid_UID/job_ID/step_STEP/task_N (each controller)
//	           /slurm_NODENAME/uid_UID/job_ID/...     (several slurmd on a host)
//	cgroup v2: /system.slice/slurmstepd.scope/job_ID/step_STEP/user/task_N
//	           /system.slice/NODENAME_slurmstepd.scope/job_ID/...
//
// The job's directory must sit right under Slurm's own (v2) or under its
// uid_ directory (v1).
func jobInCgroup(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if id := jobInPath(parts[2]); id != "" {
			return id
		}
	}
	return ""
}

// jobInPath returns the job ID of one cgroup path, or "".
func jobInPath(p string) string {
	segs := strings.Split(path.Clean("/"+p), "/")
	for i := 1; i+1 < len(segs); i++ {
		s, next := segs[i], segs[i+1]
		switch {
		case isStepdScope(s):
			if id, ok := strings.CutPrefix(next, "job_"); ok && isJobID(id) {
				return id
			}
		case s == "slurm" || strings.HasPrefix(s, "slurm_"):
			if i+2 < len(segs) && isUIDDir(next) {
				if id, ok := strings.CutPrefix(segs[i+2], "job_"); ok && isJobID(id) {
					return id
				}
			}
		}
	}
	return ""
}

// isStepdScope says whether a cgroup v2 directory is slurmstepd's scope.
func isStepdScope(s string) bool {
	return s == "slurmstepd.scope" || (strings.HasSuffix(s, "_slurmstepd.scope") && len(s) > len("_slurmstepd.scope"))
}

// isUIDDir says whether a cgroup v1 directory is Slurm's "uid_N".
func isUIDDir(s string) bool {
	n, ok := strings.CutPrefix(s, "uid_")
	return ok && isDigits(n)
}

// isJobID says whether s is a Slurm job ID: digits, at most 10 (a uint32).
func isJobID(s string) bool {
	if len(s) > 10 || !isDigits(s) {
		return false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n > 0
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// maxEnviron bounds what is read of an environ file.
const maxEnviron = 256 << 10

// readEnviron reads the SLURM_ variables of an environ file (NUL-separated
// K=V); nil when unreadable.
func readEnviron(file string) map[string]string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxEnviron))
	return parseEnviron(b)
}

// parseEnviron returns the SLURM_ variables of an environ text; the first
// of a name wins, as getenv's does.
func parseEnviron(b []byte) map[string]string {
	out := map[string]string{}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok || !bytes.HasPrefix(k, []byte("SLURM_")) {
			continue
		}
		if _, seen := out[string(k)]; !seen {
			out[string(k)] = string(v)
		}
	}
	return out
}
