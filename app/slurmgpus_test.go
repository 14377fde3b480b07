package app

import (
	"context"
	"strings"
	"testing"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// putLive stores machine origin's latest full sample: GPU i held as gs[i]
// says, at 10*(i+1)% utilization, with one process of its holder of
// (i+1) GiB, and on GPU 0 also one of another Slurm job of 5 GiB.
func putLive(t *testing.T, db *store.DB, origin string, gs []gpuSays) {
	t.Helper()
	s := agent.Sample{Time: idleNow}
	for i, g := range gs {
		procs := []gpu.Process{{PID: uint32(100 + i), MemBytes: uint64(i+1) << 30}}
		h := slurmHolder(g.holder, g.job)
		s.Holding.HoldProc(uint32(100+i), h)
		if i == 0 {
			procs = append(procs, gpu.Process{PID: 999, MemBytes: 5 << 30})
			s.Holding.HoldProc(999, alloc.Holder{Kind: alloc.SlurmJob, ID: "9", Name: "slurm job 9"})
		}
		uuid := "GPU-" + origin + string(rune('0'+i))
		s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: uuid, UtilPercent: float64(10 * (i + 1)), Processes: procs})
		holdGPU(&s, i, g.holder, g.job)
	}
	putRecord(t, db, origin, history.KindLive, "", idleNow, mustJSON(t, s))
}

// TestSlurmGPUs: stats of a Slurm job shows its GPUs as its proven hosts
// report them, with the memory and processes of its own processes only;
// attacks first: a machine that is no host of the job, one posing as a
// host, and another labpool job of the same Slurm ID show nothing.
func TestSlurmGPUs(t *testing.T) {
	ctx := context.Background()
	t.Run("a machine that is no host, and one posing as node2", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1")
		putHost(t, db, evilID, "laptop")
		putHost(t, db, "ZZZZ-8888-8888-8888", "NODE2.lab") // no session from node2's address
		putLive(t, db, node1ID, holding)
		putLive(t, db, evilID, holding)
		putLive(t, db, "ZZZZ-8888-8888-8888", holding)
		got := NewSlurmIdle(db, idleProof().proof()).GPUs(ctx, idleJob)
		if len(got) != 2 || got[0].Host != "node1" || got[1].Host != "node1" {
			t.Errorf("GPUs %+v, want node1's two only", got)
		}
	})
	t.Run("a second agent on the host, beside the enrolled one", func(t *testing.T) {
		db := openDB(t)
		f := idleProof()
		putHost(t, db, node1ID, "node1")
		putHost(t, db, evilID, "node1")
		f.sessions[evilID] = f.sessions[node1ID]
		putLive(t, db, node1ID, holding)
		putLive(t, db, evilID, holding)
		got := NewSlurmIdle(db, f.proof()).GPUs(ctx, idleJob)
		if len(got) != 2 || !strings.HasPrefix(got[0].UUID, "GPU-NOD1") || !strings.HasPrefix(got[1].UUID, "GPU-NOD1") {
			t.Errorf("GPUs %+v, want the enrolled node1's two only", got)
		}
	})
	t.Run("an agent a job started on a node enrolled for none", func(t *testing.T) {
		db := openDB(t)
		f := idleProof()
		delete(f.enrolled, "node1")
		putHost(t, db, evilID, "node1")
		f.sessions[evilID] = f.sessions[node1ID]
		putLive(t, db, evilID, holding)
		if got := NewSlurmIdle(db, f.proof()).GPUs(ctx, idleJob); len(got) != 0 {
			t.Errorf("GPUs %+v of a node no machine is enrolled for, want none", got)
		}
	})
	t.Run("another labpool job of the same Slurm ID", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1")
		putLive(t, db, node1ID, []gpuSays{{"slurm job 123", "job-else", 0}})
		if got := NewSlurmIdle(db, idleProof().proof()).GPUs(ctx, idleJob); len(got) != 0 {
			t.Errorf("GPUs %+v of another labpool job, want none", got)
		}
	})
	t.Run("both hosts proven", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1.cluster.lab")
		putHost(t, db, node2ID, "Node2")
		putLive(t, db, node1ID, holding)
		putLive(t, db, node2ID, holding[1:])
		got := NewSlurmIdle(db, idleProof().proof()).GPUs(ctx, idleJob)
		want := []jobs.GPUStats{
			{UUID: "GPU-" + node1ID + "0", Index: 0, Host: "node1", UtilPercent: 10, MemUsedBytes: 1 << 30},
			{UUID: "GPU-" + node1ID + "1", Index: 1, Host: "node1", UtilPercent: 20, MemUsedBytes: 2 << 30},
			{UUID: "GPU-" + node2ID + "0", Index: 0, Host: "node2", UtilPercent: 10, MemUsedBytes: 1 << 30},
		}
		if len(got) != len(want) {
			t.Fatalf("GPUs %+v, want %+v", got, want)
		}
		for i, w := range want {
			g := got[i]
			if g.UUID != w.UUID || g.Index != w.Index || g.Host != w.Host || g.UtilPercent != w.UtilPercent || g.MemUsedBytes != w.MemUsedBytes {
				t.Errorf("GPU %d: %+v, want %+v", i, g, w)
			}
			if len(g.Processes) != 1 || g.Processes[0].PID != uint32(100+w.Index) || g.Processes[0].MemBytes != w.MemUsedBytes {
				t.Errorf("GPU %d: processes %+v, want the job's one", i, g.Processes)
			}
		}
	})
	t.Run("no Slurm job", func(t *testing.T) {
		db := openDB(t)
		putHost(t, db, node1ID, "node1")
		putLive(t, db, node1ID, holding)
		j := idleJob
		j.Executor = "docker"
		if got := NewSlurmIdle(db, idleProof().proof()).GPUs(ctx, j); got != nil {
			t.Errorf("GPUs %+v of a job that is no Slurm job", got)
		}
	})
}
