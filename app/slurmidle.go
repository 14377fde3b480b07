package app

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// SlurmIdle judges, on a cluster's agent, whether the GPUs of its running
// Slurm jobs stayed idle lately (jobs.Config.RemoteIdle): the agent sees
// no GPU of them, their compute nodes' agents do. Each compute node
// replicates its latest full sample, which says which Slurm job holds
// each of its GPUs and which labpool job that is (slurm.Procs.Annotate),
// and its samples of every second, with each GPU's utilization. The same
// reading, under the same rules, gives stats the GPUs of a Slurm job
// (GPUs, jobs.Config.RemoteGPUs).
//
// A job is idle when every one of its hosts (jobs.Job.Hosts) says so:
// the host's machine shows the job on at least one GPU in its latest
// sample, by Slurm's ID and labpool's, and every GPU it shows the job on
// stayed under the policy's utilization in each of its samples of the
// last SlurmIdleWindow, the newest of which is that recent. Anything else
// counts as busy: a host with no agent, one whose samples are missing or
// late, a GPU of the job missing from a sample. Whom it believes:
//   - only the job's own hosts (rule "a job's hosts speak for it"): a
//     machine counts for host H only where its node record names H as its
//     host name; another machine's word on the job is never read;
//   - only the machine the cluster machine's owner enrolled for H (rule "a
//     compute node is enrolled by the cluster's owner", SlurmProof), and
//     only once proven to be H (rule "a compute node is proven by its
//     address"): this agent holds a live session with it, its device ID
//     pinned by the handshake, from an IP of H's NodeAddr;
//   - only one machine per host (rule "one agent per compute node"): a
//     host for which two machines are proven counts as a host with no
//     agent;
//   - a machine only on its own GPUs: every record read for host H is
//     that machine's own (its origin), never one it relays.
//
// A session from H's address alone cannot tell who runs the agent there:
// anyone who can start a process on H (a member's Slurm job) could run
// one; the enrolment says which device ID speaks for H.
type SlurmIdle struct {
	db    *store.DB
	proof SlurmProof

	mu       sync.Mutex           // guards the fields below
	hosts    map[string][]string  // host name (lower case, short) -> the device IDs that claim it
	read     time.Time            // when the node records were last read; zero: never
	resolved map[string]resolved  // NodeAddr that is a name -> its IPs
	views    map[string]*hostView // machine -> what it said, kept between calls
}

// SlurmIdleWindow is how far back a compute node's samples must show a
// Slurm job's GPUs idle, and how recent its newest must be.
const SlurmIdleWindow = 10 * time.Second

// slurmHostsEvery is how often SlurmIdle reads the node records again.
const slurmHostsEvery = 30 * time.Second

// NewSlurmIdle returns the judge of the Slurm jobs' idleness over db,
// believing the machines that proof proves.
func NewSlurmIdle(db *store.DB, proof SlurmProof) *SlurmIdle {
	return &SlurmIdle{db: db, proof: proof, resolved: map[string]resolved{}, views: map[string]*hostView{}}
}

// Idle implements jobs.Config.RemoteIdle: the jobs of js whose GPUs all
// stayed under below percent over the window before now.
func (x *SlurmIdle) Idle(now time.Time, js []jobs.Job, below float64) map[string]bool {
	ctx := context.Background()
	out := map[string]bool{}
	if len(js) == 0 {
		return out
	}
	hosts := x.provenHosts(ctx, now)
	live := x.latest(ctx, history.KindLive) // one query for all machines
	newest := x.latest(ctx, history.KindSample1s)
	views := map[string]*hostView{} // machine -> what it says, read once per call
	for _, j := range js {
		out[j.ID] = x.jobIdle(ctx, now, j, below, hosts, live, newest, views)
	}
	x.mu.Lock()
	for m := range x.views {
		if views[m] == nil {
			delete(x.views, m) // a host of no running job now
		}
	}
	x.mu.Unlock()
	return out
}

// latest returns the newest record of kind of every machine, by machine
// (nil on an error: every machine then reads its own).
func (x *SlurmIdle) latest(ctx context.Context, kind string) map[string]store.Record {
	recs, err := x.db.LatestByKind(ctx, kind)
	if err != nil {
		return nil
	}
	out := map[string]store.Record{}
	for _, r := range recs {
		out[r.Origin] = r
	}
	return out
}

// jobIdle says whether every host of j shows j's GPUs idle.
func (x *SlurmIdle) jobIdle(ctx context.Context, now time.Time, j jobs.Job, below float64, hosts func(string) (string, bool), live, newest map[string]store.Record, views map[string]*hostView) bool {
	ms := jobMachines(j, hosts)
	if ms == nil {
		return false
	}
	for _, m := range ms {
		if m == "" {
			return false // no agent proven there, or two: nothing is known
		}
		v, ok := views[m]
		if !ok {
			v = x.view(ctx, now, m, live[m], newest[m], newest != nil)
			views[m] = v
		}
		if !v.idle(j, below) {
			return false
		}
	}
	return true
}

// jobMachines returns the machine proven for each host of j (hosts, see
// provenHosts), in the order of j.Hosts: "" where none is, or several are
// (nothing is known of that host); nil where j is no Slurm job with hosts.
func jobMachines(j jobs.Job, hosts func(string) (string, bool)) []string {
	if j.Executor != "slurm" || j.Container == "" || len(j.Hosts) == 0 {
		return nil
	}
	ms := make([]string, len(j.Hosts))
	for i, h := range j.Hosts {
		if m, ok := hosts(shortHost(h)); ok {
			ms[i] = m
		}
	}
	return ms
}

// heldGPUs returns the GPUs that sample s (a compute node's) shows j on,
// by Slurm's ID and labpool's.
func heldGPUs(s *agent.Sample, j jobs.Job) []gpu.Stats {
	if s == nil {
		return nil
	}
	holder := slurm.HolderName(j.Container)
	var held []gpu.Stats
	for _, g := range s.GPUs {
		if h := s.Holding.GPU(g.UUID); h.Scheduler() == holder && h.JobID() == j.ID {
			held = append(held, g)
		}
	}
	return held
}

// GPUs implements jobs.Config.RemoteGPUs: the GPUs of Slurm job j on its
// hosts, by each host's proven machine's latest full sample (whom it
// believes is as for Idle): each GPU's utilization, and the memory and
// processes of j's own processes on it. A host with no proven machine
// shows none.
func (x *SlurmIdle) GPUs(ctx context.Context, j jobs.Job) []jobs.GPUStats {
	return x.gpusAt(ctx, time.Now(), j)
}

func (x *SlurmIdle) gpusAt(ctx context.Context, now time.Time, j jobs.Job) []jobs.GPUStats {
	ms := jobMachines(j, x.provenHosts(ctx, now))
	if !slices.ContainsFunc(ms, func(m string) bool { return m != "" }) {
		return nil
	}
	live := x.latest(ctx, history.KindLive)
	holder := slurm.HolderName(j.Container)
	var out []jobs.GPUStats
	for i, m := range ms {
		rec, ok := live[m]
		if m == "" || !ok || rec.Origin != m {
			continue
		}
		s, err := history.Decode(rec.Data)
		if err != nil {
			continue
		}
		for _, g := range heldGPUs(&s, j) {
			gs := jobs.GPUStats{UUID: g.UUID, Index: g.Index, Host: j.Hosts[i], UtilPercent: g.UtilPercent, Processes: []gpu.Process{}}
			for _, p := range g.Processes {
				if h := s.Holding.Proc(p.PID); h.Scheduler() == holder && h.JobID() == j.ID {
					gs.MemUsedBytes += p.MemBytes
					gs.Processes = append(gs.Processes, p)
				}
			}
			out = append(out, gs)
		}
	}
	return out
}

// hostView is what one compute node says of its GPUs: its latest full
// sample and its samples of the window, oldest first (none: late).
type hostView struct {
	live   *agent.Sample
	liveAt time.Time // the live record's time
	recent []timedSample
}

type timedSample struct {
	at time.Time
	s  agent.Sample
}

// view reads machine m's own records (rec: its live one; newest: its newest
// 1 s one) newer than those its view kept from the last call (each is
// decoded once), and drops the samples older than the window.
func (x *SlurmIdle) view(ctx context.Context, now time.Time, m string, rec, newest store.Record, listed bool) *hostView {
	x.mu.Lock()
	v := x.views[m]
	x.mu.Unlock()
	if v == nil {
		v = &hostView{}
	}
	if rec.Origin == m && !rec.Time.Equal(v.liveAt) {
		v.live, v.liveAt = nil, rec.Time
		if live, err := history.Decode(rec.Data); err == nil {
			v.live = &live
		}
	}
	x.readRecent(ctx, now, m, v, newest, listed)
	i := 0
	for i < len(v.recent) && v.recent[i].at.Before(now.Add(-SlurmIdleWindow)) {
		i++
	}
	v.recent = v.recent[i:]
	x.mu.Lock()
	x.views[m] = v
	x.mu.Unlock()
	return v
}

// readRecent adds to v machine m's 1 s samples newer than v's up to a
// window past now (the node's clock may run a little ahead); listed says
// that newest is m's newest, or m has none (zero). Where the
// only one is newest, the record right after v's last (one a second, keyed
// by its second), it takes that; else it reads them (one query a machine).
func (x *SlurmIdle) readRecent(ctx context.Context, now time.Time, m string, v *hostView, newest store.Record, listed bool) {
	to := now.Add(SlurmIdleWindow)
	n := len(v.recent)
	switch {
	case listed && (newest.Origin != m || (n > 0 && !newest.Time.After(v.recent[n-1].at))):
		return // nothing new
	case n > 0 && newest.Time.Unix()-v.recent[n-1].at.Unix() == 1 && newest.Time.Before(to):
		if s, err := history.Decode(newest.Data); err == nil {
			v.recent = append(v.recent, timedSample{newest.Time, s})
			return
		}
	}
	from := now.Add(-SlurmIdleWindow)
	if n > 0 && !v.recent[n-1].at.Before(from) {
		from = v.recent[n-1].at.Add(time.Nanosecond)
	}
	err := x.db.Each(ctx, m, history.KindSample1s, from, to, func(at time.Time, data []byte) error {
		s, err := history.Decode(data)
		if err != nil {
			return err
		}
		v.recent = append(v.recent, timedSample{at, s})
		return nil
	})
	if err != nil {
		v.recent = nil // read again from the window's start
	}
}

// idle says whether the GPUs the node shows j on all stayed under below in
// every sample of the window.
func (v *hostView) idle(j jobs.Job, below float64) bool {
	if v.live == nil || len(v.recent) == 0 {
		return false
	}
	held := heldGPUs(v.live, j)
	if len(held) == 0 {
		return false
	}
	for _, ts := range v.recent {
		for _, h := range held {
			g, ok := gpuOf(ts.s.GPUs, h.Index)
			if !ok || g.UtilPercent >= below {
				return false
			}
		}
	}
	return true
}

// gpuOf returns the GPU of index i in gs.
func gpuOf(gs []gpu.Stats, i int) (gpu.Stats, bool) {
	for _, g := range gs {
		if g.Index == i {
			return g, true
		}
	}
	return gpu.Stats{}, false
}

// provenHosts returns the machine proven for each host name it is asked
// (lower case, short), each answered once per call: of the machines whose
// node records claim the host, the one with a live session from an IP of
// the host's NodeAddr; false where none or several are.
func (x *SlurmIdle) provenHosts(ctx context.Context, now time.Time) func(string) (string, bool) {
	claims := x.machines(ctx, now)
	addrs := x.proof.nodeAddrs()
	type answer struct {
		m  string
		ok bool
	}
	memo := map[string]answer{}
	return func(h string) (string, bool) {
		if a, ok := memo[h]; ok {
			return a.m, a.ok
		}
		var a answer
		if addr, ok := addrs[h]; ok && len(claims[h]) > 0 {
			x.mu.Lock()
			ips := x.addrIPs(ctx, now, addr)
			x.mu.Unlock()
			a.m, a.ok = x.proof.proven(x.proof.enrolled(h, claims[h]), ips)
		}
		memo[h] = a
		return a.m, a.ok
	}
}

// machines returns the machines that claim each host name, read again
// every slurmHostsEvery; on an error the last answer stays.
func (x *SlurmIdle) machines(ctx context.Context, now time.Time) map[string][]string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.read.IsZero() && now.Sub(x.read) < slurmHostsEvery && now.After(x.read) {
		return x.hosts
	}
	x.read = now
	if hosts, err := hostClaims(ctx, x.db); err == nil {
		x.hosts = hosts
	}
	return x.hosts
}

// hostClaims maps the host name of each machine in db (lower case, up to
// its first dot) to the device IDs whose node records give it.
func hostClaims(ctx context.Context, db *store.DB) (map[string][]string, error) {
	return nodeClaims(ctx, db, func(nr NodeRecord) string { return shortHost(nr.Info.Host.Hostname) })
}

// shortHost is a host name as Slurm names its nodes: lower case, up to the
// first dot.
func shortHost(name string) string {
	name, _, _ = strings.Cut(strings.ToLower(strings.TrimSpace(name)), ".")
	return name
}
