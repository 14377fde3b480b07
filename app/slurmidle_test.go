package app

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/store"
)

// Device IDs of the compute nodes of the idle fixture.
const (
	node1ID = "NOD1-5555-5555-5555" // host node1 of the job
	node2ID = "NOD2-6666-6666-6666" // host node2 of the job
	evilID  = "EVIL-7777-7777-7777" // a member's machine, host of nothing
)

// idleNow is when the judge is asked.
var idleNow = t0.Add(time.Hour)

// idleJob is the cluster agent's running Slurm job 123 on node1 and node2.
var idleJob = jobs.Job{ID: "job-train", Node: clusID, Owner: alphaID, Executor: "slurm", Container: "123",
	State: jobs.Running, Hosts: []string{"node1", "node2"}}

// gpuSays is what a compute node says of one of its GPUs: who holds it and
// how busy it is.
type gpuSays struct {
	holder, job string
	util        float64
}

// slurmHolder is the Slurm job holder ("slurm job 123", "": none) that
// runs labpool's job ("": none of labpool's).
func slurmHolder(holder, job string) alloc.Holder {
	if holder == "" {
		return alloc.Holder{}
	}
	return alloc.Holder{Kind: alloc.SlurmJob, ID: strings.TrimPrefix(holder, "slurm job "), Name: holder, Job: job}
}

// holdGPU records in s that its GPU i is held by the Slurm job holder,
// which runs labpool's job.
func holdGPU(s *agent.Sample, i int, holder, job string) {
	if h := slurmHolder(holder, job); h.Held() {
		s.Holding.HoldGPU(s.GPUs[i].UUID, h)
	}
}

// putHost stores machine origin's node record, with its host name.
func putHost(t testing.TB, db *store.DB, origin, hostname string) {
	t.Helper()
	putNode(t, db, origin, NodeRecord{Info: hostInfo(origin, hostname)})
}

// hostInfo is the node information of machine id on host hostname.
func hostInfo(id, hostname string) agent.Info {
	return agent.Info{ID: id, Name: hostname, Host: host.Info{Hostname: hostname}}
}

// putGPUs stores what machine origin says of its GPUs: its live sample and
// a 1 s sample every second of the window before idleNow (the last one
// second before it), each figure from util(second, GPU index).
func putGPUs(t testing.TB, db *store.DB, origin string, gs []gpuSays, util func(sec, i int) float64) {
	t.Helper()
	sample := func(tm time.Time, sec int) agent.Sample {
		s := agent.Sample{Time: tm}
		for i, g := range gs {
			s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: "GPU-" + origin + string(rune('0'+i)), UtilPercent: util(sec, i)})
			holdGPU(&s, i, g.holder, g.job)
		}
		return s
	}
	end := idleNow.Add(-time.Second)
	putRecord(t, db, origin, history.KindLive, "", end, mustJSON(t, sample(end, 0)))
	for sec := 0; sec < int(SlurmIdleWindow/time.Second); sec++ {
		tm := end.Add(-time.Duration(sec) * time.Second)
		putRecord(t, db, origin, history.KindSample1s, history.Key(tm), tm, history.Encode(history.FromSample(sample(tm, sec))))
	}
}

// holding is GPUs 0 and 1 held by the job, GPU 2 by another.
var holding = []gpuSays{{"slurm job 123", "job-train", 0}, {"slurm job 123", "job-train", 0}, {"slurm job 9", "", 0}}

// flat is a utilization of v on GPUs 0 and 1, 99% on GPU 2.
func flat(v float64) func(int, int) float64 {
	return func(_, i int) float64 {
		if i == 2 {
			return 99
		}
		return v
	}
}

// fakeProof is what the cluster's agent knows of where the machines are:
// the nodes' NodeAddr from Slurm, what the names among them resolve to,
// and the IPs its live sessions with each machine come from.
type fakeProof struct {
	nodes    []slurm.Node
	names    map[string][]netip.Addr // a name that does not resolve is absent
	sessions map[string][]netip.Addr // device ID -> its sessions' IPs
	enrolled map[string]string       // node -> the device ID its owner enrolled
	lookups  int
}

// idleProof is the idle fixture's cluster: node1 at an IP, node2 at a name,
// each with a session from its own address (node2's over IPv6, mapped).
func idleProof() *fakeProof {
	return &fakeProof{
		nodes: []slurm.Node{{Name: "node1", Addr: "10.0.1.1"}, {Name: "node2", Addr: "node2.ib.lab"}},
		names: map[string][]netip.Addr{"node2.ib.lab": {netip.MustParseAddr("10.0.1.2")}},
		sessions: map[string][]netip.Addr{
			node1ID: {netip.MustParseAddr("10.0.1.1")},
			node2ID: {netip.MustParseAddr("::ffff:10.0.1.2")},
		},
		enrolled: map[string]string{"node1": node1ID, "node2": node2ID},
	}
}

func (f *fakeProof) proof() SlurmProof {
	return SlurmProof{
		Nodes: func() []slurm.Node { return f.nodes },
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			f.lookups++
			if ips, ok := f.names[host]; ok {
				return ips, nil
			}
			return nil, fmt.Errorf("lookup %s: no such host", host)
		},
		Sessions: func(id string) []netip.Addr { return f.sessions[id] },
		Enrolled: func(node string) string { return f.enrolled[node] },
	}
}

func judge(t *testing.T, db *store.DB, j jobs.Job) bool {
	t.Helper()
	return judgeBy(t, db, idleProof(), j)
}

func judgeBy(t *testing.T, db *store.DB, f *fakeProof, j jobs.Job) bool {
	t.Helper()
	return NewSlurmIdle(db, f.proof()).Idle(idleNow, []jobs.Job{j}, 5)[j.ID]
}

// TestSlurmIdleForgedNotBelieved: attacks first. A machine that is not a
// host of the job, or that poses as one, cannot make a busy job idle.
func TestSlurmIdleForgedNotBelieved(t *testing.T) {
	t.Run("a machine that is no host of the job", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1")
		putHost(t, db, node2ID, "node2")
		putHost(t, db, evilID, "laptop")
		putGPUs(t, db, node1ID, holding, flat(90)) // busy
		putGPUs(t, db, node2ID, holding, flat(90))
		putGPUs(t, db, evilID, holding, flat(0)) // "job 123 is idle here"
		if judge(t, db, idleJob) {
			t.Error("a busy job is idle by the word of a machine that is not its host")
		}
	})
	t.Run("standing in for a host with no agent", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1")
		putHost(t, db, evilID, "laptop")
		putGPUs(t, db, node1ID, holding, flat(0))
		putGPUs(t, db, evilID, holding, flat(0))
		if judge(t, db, idleJob) {
			t.Error("idle with nothing known of host node2")
		}
	})
	for _, evil := range []string{evilID, "ZZZZ-8888-8888-8888"} { // read before and after the real host
		t.Run("posing as a host "+evil[:4], func(t *testing.T) {
			db := openDB(t)
			putHost(t, db, node1ID, "node1")
			putHost(t, db, node2ID, "node2")
			putHost(t, db, evil, "NODE2.lab") // with no session from node2's address
			putGPUs(t, db, node1ID, holding, flat(0))
			putGPUs(t, db, node2ID, holding, flat(90))
			putGPUs(t, db, evil, holding, flat(0))
			if judge(t, db, idleJob) {
				t.Error("a busy job is idle by the word of a machine posing as its host")
			}
		})
	}
	// A member's job on node2 starts an agent of its own there: its
	// sessions come from node2's address, but the cluster's owner
	// enrolled another device for node2, or none.
	for name, enrolled := range map[string]string{"beside no agent": node2ID, "on a node enrolled for none": ""} {
		t.Run("an agent a job started "+name, func(t *testing.T) {
			db := openDB(t)
			putHost(t, db, node1ID, "node1")
			putHost(t, db, evilID, "node2")
			putGPUs(t, db, node1ID, holding, flat(0))
			putGPUs(t, db, evilID, holding, flat(0))
			f := idleProof()
			f.sessions[evilID] = []netip.Addr{netip.MustParseAddr("10.0.1.2")}
			f.enrolled["node2"] = enrolled
			if judgeBy(t, db, f, idleJob) {
				t.Error("a busy job is idle by the word of an agent its own job could start on its node")
			}
		})
	}
	t.Run("another cluster's job of the same ID", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1")
		putHost(t, db, node2ID, "node2")
		other := []gpuSays{{"slurm job 123", "job-else", 0}, {"slurm job 123", "job-else", 0}}
		putGPUs(t, db, node1ID, other, flat(0))
		putGPUs(t, db, node2ID, other, flat(0))
		if judge(t, db, idleJob) {
			t.Error("idle by GPUs of another labpool job that has the same Slurm ID")
		}
	})
}

// TestSlurmIdle: a job is idle only when every host shows every GPU of it
// under the policy's utilization in every second of the window.
func TestSlurmIdle(t *testing.T) {
	tests := []struct {
		name         string
		node1, node2 func(sec, i int) float64
		hosts1       []gpuSays
		want         bool
	}{
		{"idle on both hosts", flat(1), flat(4.9), holding, true},
		{"busy on one host", flat(1), flat(80), holding, false},
		{"at the threshold", flat(1), flat(5), holding, false},
		{"one GPU busy", func(_, i int) float64 { return float64(i * 50) }, flat(0), holding, false},
		{"busy one second of the window", func(sec, _ int) float64 {
			if sec == 7 {
				return 60
			}
			return 0
		}, flat(0), holding, false},
		{"no GPU of the job on a host", flat(0), flat(0), []gpuSays{{"slurm job 9", "", 0}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			putHost(t, db, node1ID, "node1.cluster.lab")
			putHost(t, db, node2ID, "Node2")
			putGPUs(t, db, node1ID, tt.hosts1, tt.node1)
			putGPUs(t, db, node2ID, holding, tt.node2)
			if got := judge(t, db, idleJob); got != tt.want {
				t.Errorf("idle = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSlurmIdleUnknownIsBusy: what is late, missing or not a Slurm job
// counts as busy.
func TestSlurmIdleUnknownIsBusy(t *testing.T) {
	db := openDB(t)
	putHost(t, db, node1ID, "node1")
	putHost(t, db, node2ID, "node2")
	putGPUs(t, db, node1ID, holding, flat(0))
	putGPUs(t, db, node2ID, holding, flat(0))
	x := NewSlurmIdle(db, idleProof().proof())
	if !x.Idle(idleNow, []jobs.Job{idleJob}, 5)[idleJob.ID] {
		t.Fatal("the fixture's job is not idle")
	}
	if x.Idle(idleNow.Add(SlurmIdleWindow+2*time.Second), []jobs.Job{idleJob}, 5)[idleJob.ID] {
		t.Error("idle by samples older than the window")
	}
	docker := idleJob
	docker.Executor = ""
	noHosts := idleJob
	noHosts.ID, noHosts.Hosts = "job-nohosts", nil
	got := x.Idle(idleNow, []jobs.Job{docker, noHosts}, 5)
	if got[docker.ID] || got[noHosts.ID] {
		t.Errorf("idle = %v for a job that is not Slurm's or has no hosts", got)
	}

	// A GPU of the job missing from a second's sample.
	db = openDB(t)
	putHost(t, db, node1ID, "node1")
	putHost(t, db, node2ID, "node2")
	putGPUs(t, db, node2ID, holding, flat(0))
	putGPUs(t, db, node1ID, holding, flat(0))
	tm := idleNow.Add(-3 * time.Second)
	putRecord(t, db, node1ID, history.KindSample1s, history.Key(tm), tm, history.Encode(history.FromSample(agent.Sample{Time: tm, GPUs: []gpu.Stats{{Index: 0}}})))
	if judge(t, db, idleJob) {
		t.Error("idle with GPU 1 missing from a sample")
	}
}

// TestSlurmIdleFollowsNewSamples: called every second, the judge sees each
// new sample once, whether one arrived since the last call or several, and
// a busy second keeps the job busy until it leaves the window.
func TestSlurmIdleFollowsNewSamples(t *testing.T) {
	db := openDB(t)
	putHost(t, db, node1ID, "node1")
	putHost(t, db, node2ID, "node2")
	putGPUs(t, db, node1ID, holding, flat(0))
	putGPUs(t, db, node2ID, holding, flat(0))
	second := func(origin string, tm time.Time, util float64) {
		s := agent.Sample{Time: tm}
		for i, g := range holding {
			s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: fmt.Sprint("GPU-", i), UtilPercent: util})
			holdGPU(&s, i, g.holder, g.job)
		}
		putRecord(t, db, origin, history.KindSample1s, history.Key(tm), tm, history.Encode(history.FromSample(s)))
	}
	x := NewSlurmIdle(db, idleProof().proof())
	idle := func(now time.Time) bool { return x.Idle(now, []jobs.Job{idleJob}, 5)[idleJob.ID] }
	if !idle(idleNow) {
		t.Fatal("the fixture's job is not idle")
	}
	second(node1ID, idleNow, 0)
	second(node2ID, idleNow, 70) // the one new second, busy
	if idle(idleNow.Add(time.Second)) {
		t.Fatal("idle after a busy second on node2")
	}
	for s := 1; s <= 9; s++ { // several at once
		second(node1ID, idleNow.Add(time.Duration(s)*time.Second), 0)
		second(node2ID, idleNow.Add(time.Duration(s)*time.Second), 0)
	}
	if idle(idleNow.Add(10 * time.Second)) {
		t.Fatal("idle while the busy second is in the window")
	}
	second(node1ID, idleNow.Add(10*time.Second), 0)
	second(node2ID, idleNow.Add(10*time.Second), 0)
	if !idle(idleNow.Add(11 * time.Second)) {
		t.Fatal("busy after the busy second left the window")
	}
	second(node1ID, idleNow.Add(13*time.Second), 0)
	second(node2ID, idleNow.Add(11*time.Second), 0)
	second(node2ID, idleNow.Add(12*time.Second), 80) // before the newest: read, not skipped
	second(node2ID, idleNow.Add(13*time.Second), 0)
	if idle(idleNow.Add(14 * time.Second)) {
		t.Fatal("idle with a busy second before the newest")
	}
}

// TestSlurmIdleProvenByAddress: attacks first. A machine counts as compute
// node H only over a live session from an IP of H's NodeAddr (rule "a
// compute node is proven by its address"); a machine naming itself H is
// not enough. node2 runs no agent in the attacks; the poser says job 123
// is idle on it.
func TestSlurmIdleProvenByAddress(t *testing.T) {
	ip := netip.MustParseAddr
	attacks := []struct {
		name string
		from []netip.Addr // the poser's sessions' IPs
	}{
		{"no session", nil},
		{"a session from another address", []netip.Addr{ip("10.9.9.9")}},
		{"a session from another node's address", []netip.Addr{ip("10.0.1.1")}},
	}
	for _, a := range attacks {
		t.Run("posing as a host with "+a.name, func(t *testing.T) {
			db := openDB(t)
			putHost(t, db, node1ID, "node1")
			putHost(t, db, evilID, "node2")
			putGPUs(t, db, node1ID, holding, flat(0))
			putGPUs(t, db, evilID, holding, flat(0)) // "job 123 is idle here"
			f := idleProof()
			f.sessions[evilID] = a.from
			if judgeBy(t, db, f, idleJob) {
				t.Error("a job is idle by the word of a machine not proven to be its host")
			}
		})
	}
	t.Run("a second agent on the host, beside the enrolled one", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1")
		putHost(t, db, node2ID, "node2")
		putHost(t, db, evilID, "node2")
		putGPUs(t, db, node1ID, holding, flat(0))
		putGPUs(t, db, node2ID, holding, flat(90)) // busy, by the enrolled agent's word
		putGPUs(t, db, evilID, holding, flat(0))
		f := idleProof()
		f.sessions[evilID] = []netip.Addr{ip("10.0.1.2")} // a second agent on node2
		if judgeBy(t, db, f, idleJob) {
			t.Error("idle by the word of an agent on node2 that its owner did not enroll")
		}
	})

	// The real nodes, each with a session from its NodeAddr, are believed,
	// a poser with no such session beside them changing nothing.
	db := openDB(t)
	putHost(t, db, node1ID, "node1")
	putHost(t, db, node2ID, "node2")
	putHost(t, db, evilID, "node2")
	putGPUs(t, db, node1ID, holding, flat(0))
	putGPUs(t, db, node2ID, holding, flat(0))
	putGPUs(t, db, evilID, holding, flat(90))
	f := idleProof()
	f.sessions[evilID] = []netip.Addr{ip("10.9.9.9")}
	x := NewSlurmIdle(db, f.proof())
	if !x.Idle(idleNow, []jobs.Job{idleJob}, 5)[idleJob.ID] {
		t.Fatal("busy with both hosts proven and idle")
	}

	// What is not proven now is unknown: a session ended, a node Slurm
	// does not list, a NodeAddr that does not resolve.
	delete(f.sessions, node2ID)
	if x.Idle(idleNow, []jobs.Job{idleJob}, 5)[idleJob.ID] {
		t.Error("idle after node2's session ended")
	}
	if f.lookups != 1 {
		t.Errorf("node2's NodeAddr resolved %d times in two calls; want once (every %v)", f.lookups, slurmHostsEvery)
	}
	unproven := map[string]*fakeProof{"not in Slurm's nodes": idleProof(), "unresolved NodeAddr": idleProof()}
	unproven["not in Slurm's nodes"].nodes = unproven["not in Slurm's nodes"].nodes[:1]
	unproven["unresolved NodeAddr"].names = nil
	for name, f := range unproven {
		if judgeBy(t, db, f, idleJob) {
			t.Errorf("idle with node2 %s", name)
		}
	}
}
