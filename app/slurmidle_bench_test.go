package app

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
)

// BenchmarkSlurmIdle is one second of a cluster agent's idle reclaim with
// 1,000 running Slurm jobs on 125 compute nodes of 8 GPUs (one job per
// GPU), each node's 1 s sample of that second just replicated (and its
// live sample every 30 s, as history.LiveEvery).
func BenchmarkSlurmIdle(b *testing.B) {
	db := openDB(b)
	var js []jobs.Job
	var ids []string
	sample := map[string]agent.Sample{}
	proof := &fakeProof{sessions: map[string][]netip.Addr{}}
	for n := range 125 {
		id, name := fmt.Sprintf("NODE-%04d", n), fmt.Sprintf("gpu%03d", n)
		ids = append(ids, id)
		ip := netip.AddrFrom4([4]byte{10, 0, 2, byte(n)})
		proof.nodes = append(proof.nodes, slurm.Node{Name: name, Addr: ip.String()})
		proof.sessions[id] = []netip.Addr{ip}
		putNode(b, db, id, NodeRecord{Info: hostInfo(id, name)})
		var gs []gpuSays
		s := agent.Sample{}
		for g := range 8 {
			j := jobs.Job{ID: fmt.Sprintf("job-%d-%d", n, g), Executor: "slurm", Container: fmt.Sprint(1000 + n*8 + g), State: jobs.Running, Hosts: []string{name}}
			js = append(js, j)
			gs = append(gs, gpuSays{"slurm job " + j.Container, j.ID, 0})
			s.GPUs = append(s.GPUs, gpu.Stats{Index: g, UUID: fmt.Sprintf("GPU-%s-%d", id, g), UtilPercent: 1})
			holdGPU(&s, g, "slurm job "+j.Container, j.ID)
		}
		sample[id] = s
		putGPUs(b, db, id, gs, func(_, _ int) float64 { return 1 })
	}
	x := NewSlurmIdle(db, proof.proof())
	now := idleNow
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for _, id := range ids {
			s := sample[id]
			s.Time = now
			putRecord(b, db, id, history.KindSample1s, history.Key(now), now, history.Encode(history.FromSample(s)))
			if i%30 == 0 {
				putRecord(b, db, id, history.KindLive, "", now, mustJSON(b, s))
			}
		}
		now = now.Add(time.Second)
		b.StartTimer()
		if got := x.Idle(now, js, 5); len(got) != len(js) || !got[js[0].ID] {
			b.Fatalf("idle: %d jobs", len(got))
		}
	}
}
