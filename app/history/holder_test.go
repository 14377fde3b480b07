package history

import (
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// A GPU a Slurm job holds on a compute node counts as granted: idle when
// its processes idle, never "busy outside labpool" for them.
func TestSlurmHolderIsAGrant(t *testing.T) {
	s7 := alloc.Holder{Kind: alloc.SlurmJob, ID: "7", Name: "slurm job 7"}
	s8 := alloc.Holder{Kind: alloc.SlurmJob, ID: "8", Name: "slurm job 8", Job: "job-a"}
	s := agent.Sample{Time: time.Unix(1e9, 0), GPUs: []gpu.Stats{
		{Index: 0, UUID: "GPU-0", UtilPercent: 0, Processes: []gpu.Process{{PID: 9}}},
		{Index: 1, UUID: "GPU-1", UtilPercent: 0, Processes: []gpu.Process{{PID: 10}}},
		{Index: 2, UUID: "GPU-2", UtilPercent: 80, Processes: []gpu.Process{{PID: 9}}},
		{Index: 3, UUID: "GPU-3", UtilPercent: 0, Processes: []gpu.Process{{PID: 11}}},
	}, Holding: alloc.Holding{GPUs: map[string]alloc.Holder{"GPU-0": s7, "GPU-1": s8, "GPU-2": s7},
		Procs: map[uint32]alloc.Holder{9: s7, 10: s8}}}
	p := FromSample(s)
	want := []struct{ busy, idle float64 }{{0, 1}, {0, 1}, {1, 0}, {1, 0}}
	for i, w := range want {
		if g := p.GPUs[i]; g.Busy != w.busy || g.IdleGranted != w.idle {
			t.Errorf("GPU %d: busy %v idle granted %v; want %v, %v", i, g.Busy, g.IdleGranted, w.busy, w.idle)
		}
	}
}

// oldRecord is a 1 s record an agent wrote before the holder left
// gpu.Stats: the sample's JSON with "job" and "holder" inside each GPU.
// GPU 0 idle, granted to job-1; GPU 1 idle, held by a Slurm job; GPU 2
// idle, used by a process outside labpool; GPU 3 free.
const oldRecord = `{"time":"2026-03-01T12:00:00Z","host":{},"gpus":[` +
	`{"index":0,"uuid":"GPU-0","util_percent":1,"processes":[{"pid":7,"mem_bytes":1,"job":"job-1","owner":"A"}],"job":"job-1"},` +
	`{"index":1,"uuid":"GPU-1","util_percent":0,"processes":[{"pid":8,"mem_bytes":1,"job":"","owner":"","holder":"slurm job 5"}],"job":"","holder":"slurm job 5"},` +
	`{"index":2,"uuid":"GPU-2","util_percent":0,"processes":[{"pid":9,"mem_bytes":1,"job":"","owner":""}],"job":""},` +
	`{"index":3,"uuid":"GPU-3","util_percent":0,"processes":[],"job":""}]}`

// TestOldRecordKeepsItsHolders: a record kept before the holder left the
// reading reads as it did: its GPUs granted, busy or free by the holders
// it names, and its sample names them in Holding.
func TestOldRecordKeepsItsHolders(t *testing.T) {
	p, err := DecodePoint(KindLive, []byte(oldRecord))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ busy, idle float64 }{{0, 1}, {0, 1}, {1, 0}, {0, 0}}
	for i, w := range want {
		if g := p.GPUs[i]; g.Busy != w.busy || g.IdleGranted != w.idle {
			t.Errorf("GPU %d: busy %v idle granted %v; want %v, %v", i, g.Busy, g.IdleGranted, w.busy, w.idle)
		}
	}
	s, err := Decode([]byte(oldRecord))
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Holding.GPU("GPU-0"); h.JobID() != "job-1" {
		t.Errorf("GPU 0 held by %+v; want job-1", h)
	}
	if h := s.Holding.Proc(7); h.JobID() != "job-1" || h.Member != "A" {
		t.Errorf("process 7 held by %+v; want job-1 of A", h)
	}
	if h := s.Holding.GPU("GPU-1"); h.Scheduler() != "slurm job 5" {
		t.Errorf("GPU 1 held by %+v; want slurm job 5", h)
	}
}
