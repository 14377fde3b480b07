package slurm

import (
	"bufio"
	"cmp"
	"io"
	"os"
	"strings"
	"sync"
)

// Procs answers JobOfProcess for a compute node's GPU processes once per
// process: a process stays in its job for life, so the answer is kept by
// PID and start time (a PID reused by a new process is asked anew).
type Procs struct {
	root    string
	cluster string // the local slurm.conf's ClusterName, "" without one

	mu    sync.Mutex // guards known and seen
	known map[int]procJob
	seen  map[int]bool // PIDs asked since the last Sweep
}

// procJob is one process's answer.
type procJob struct {
	start        uint64
	cluster, job string
	ok           bool
}

// ConfPaths are where a compute node's slurm.conf is looked for, first
// found first: the usual place, and slurmd's copy in a configless cluster.
var ConfPaths = []string{"/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/run/slurm/conf/slurm.conf", "/var/spool/slurmd/conf-cache/slurm.conf"}

// ConfPathsWith is ConfPaths after conf, the agent's own SLURM_CONF, which
// Slurm's commands read first too ("" for none).
func ConfPathsWith(conf string) []string {
	if conf == "" {
		return ConfPaths
	}
	return append([]string{conf}, ConfPaths...)
}

// NewProcs returns the Procs of the proc filesystem at root ("/proc"), on
// a node whose slurm.conf names cluster (ClusterName; "" when unknown,
// see ConfCluster).
func NewProcs(root, cluster string) *Procs {
	return &Procs{root: root, cluster: strings.ToLower(cluster), known: map[int]procJob{}, seen: map[int]bool{}}
}

// JobOf says which Slurm job process pid runs in (see JobOfProcess). The
// cluster is the local slurm.conf's where there is one (a compute node is
// in one cluster, and the file is root's, where a job may set its own
// SLURM_CLUSTER_NAME), else the job environment's. Names are lower case,
// as Slurm keeps them.
func (p *Procs) JobOf(pid int) (clusterName, jobID string, ok bool) {
	st, alive := readStat(p.root, pid)
	if !alive {
		return "", "", false
	}
	p.mu.Lock()
	p.seen[pid] = true
	k, hit := p.known[pid]
	p.mu.Unlock()
	if hit && k.start == st.start {
		return k.cluster, k.job, k.ok
	}
	c, id, ok := JobOfProcess(p.root, pid)
	if p.cluster != "" {
		c = p.cluster // root's slurm.conf over the job's own environment
	}
	c = strings.ToLower(c)
	if st2, still := readStat(p.root, pid); !still || st2.start != st.start {
		return "", "", false // replaced while read: ask again next time
	}
	p.mu.Lock()
	p.known[pid] = procJob{start: st.start, cluster: c, job: id, ok: ok}
	p.mu.Unlock()
	return c, id, ok
}

// Sweep forgets the processes not asked about since the last Sweep (gone
// from the GPUs): call it after each sample.
func (p *Procs) Sweep() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pid := range p.known {
		if !p.seen[pid] {
			delete(p.known, pid)
		}
	}
	clear(p.seen)
}

// ConfCluster reads the ClusterName of the first slurm.conf of paths that
// exists; "" when none names one.
func ConfCluster(paths []string) string {
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		name := clusterInConf(f)
		f.Close()
		return name
	}
	return ""
}

// clusterInConf returns the ClusterName of a slurm.conf text (keys are
// case-insensitive, "#" starts a comment), lower case as Slurm keeps it.
func clusterInConf(r io.Reader) string {
	sc := bufio.NewScanner(r)
	name := ""
	for sc.Scan() {
		name = cmp.Or(clusterInLine(sc.Text()), name)
	}
	return name
}

// clusterInLine is the ClusterName one slurm.conf line sets, or "".
func clusterInLine(line string) string {
	line, _, _ = strings.Cut(line, "#")
	for field := range strings.FieldsSeq(line) {
		k, v, ok := strings.Cut(field, "=")
		if ok && strings.EqualFold(k, "ClusterName") {
			return strings.ToLower(strings.Trim(v, `"`))
		}
	}
	return ""
}
