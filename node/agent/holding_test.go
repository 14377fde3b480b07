package agent

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// oldSample is a sample as an agent before the holder left gpu.Stats
// wrote it (and as the history keeps it): GPU 0 held by a labpool job with
// its process, GPU 1 by a Slurm job labpool launched, GPU 2 by a Slurm job
// it did not, GPU 3 free with a process outside labpool.
const oldSample = `{"time":"2026-03-01T12:00:00Z","host":{"cpu_percent":5},"gpus":[` +
	`{"index":0,"uuid":"GPU-0","util_percent":80,"processes":[{"pid":7,"mem_bytes":1024,"job":"job-1","owner":"ALICE"}],"job":"job-1"},` +
	`{"index":1,"uuid":"GPU-1","processes":[{"pid":8,"mem_bytes":0,"job":"job-2","owner":"BOB","holder":"slurm job 123"}],"job":"job-2","holder":"slurm job 123"},` +
	`{"index":2,"uuid":"GPU-2","processes":[{"pid":9,"mem_bytes":0,"job":"","owner":"","holder":"slurm job 77"}],"job":"","holder":"slurm job 77"},` +
	`{"index":3,"uuid":"GPU-3","processes":[{"pid":10,"mem_bytes":2048,"job":"","owner":""}],"job":""}]}`

// TestDecodeOldSample: a sample an old agent sent, or the history kept,
// still names its holders: read into Holding, its readings as they were.
func TestDecodeOldSample(t *testing.T) {
	var s Sample
	if err := json.Unmarshal([]byte(oldSample), &s); err != nil {
		t.Fatal(err)
	}
	s2 := alloc.Holder{Kind: alloc.SlurmJob, ID: "123", Name: "slurm job 123", Job: "job-2", Member: "BOB"}
	s77 := alloc.Holder{Kind: alloc.SlurmJob, ID: "77", Name: "slurm job 77"}
	want := alloc.Holding{
		GPUs: map[string]alloc.Holder{"GPU-0": {Kind: alloc.Job, ID: "job-1"},
			"GPU-1": {Kind: alloc.SlurmJob, ID: "123", Name: "slurm job 123", Job: "job-2"}, "GPU-2": s77},
		Procs: map[uint32]alloc.Holder{7: {Kind: alloc.Job, ID: "job-1", Member: "ALICE"}, 8: s2, 9: s77},
	}
	if d := cmp.Diff(want, s.Holding); d != "" {
		t.Errorf("holding of an old sample (-want +got):\n%s", d)
	}
	if len(s.GPUs) != 4 || s.GPUs[0].UtilPercent != 80 || s.GPUs[3].Processes[0] != (gpu.Process{PID: 10, MemBytes: 2048}) {
		t.Errorf("readings of an old sample: %+v", s.GPUs)
	}
}

// TestSampleRoundTrip: a new sample keeps its Holding through JSON, and
// one whose data names a holding is never read the old way.
func TestSampleRoundTrip(t *testing.T) {
	in := Sample{GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-0", Processes: []gpu.Process{{PID: 7}}}},
		Holding: alloc.Holding{GPUs: map[string]alloc.Holder{"GPU-0": {Kind: alloc.Job, ID: "job-1", Member: "ALICE"}},
			Procs: map[uint32]alloc.Holder{7: {Kind: alloc.Job, ID: "job-1", Member: "ALICE"}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Sample
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in.Holding, out.Holding); d != "" {
		t.Errorf("holding after a round trip (-want +got):\n%s", d)
	}
	// A sample that names a holding is read by it alone: holders named
	// inside its readings as well (an old field, forged or stale) are not.
	var both Sample
	err = json.Unmarshal([]byte(`{"gpus":[{"index":0,"uuid":"GPU-0","job":"forged","processes":[{"pid":7,"job":"forged","owner":"MALLORY"}]}],`+
		`"holding":{"gpus":{"GPU-0":{"kind":"job","id":"job-1"}}}}`), &both)
	if err != nil || both.Holding.GPU("GPU-0").ID != "job-1" || both.Holding.Proc(7).Held() {
		t.Errorf("a sample with a holding and old fields: %+v, %v; want its holding alone", both.Holding, err)
	}
	var free Sample
	if err := json.Unmarshal([]byte(`{"gpus":[{"index":0,"uuid":"GPU-0","processes":[]}]}`), &free); err != nil || !free.Holding.Empty() {
		t.Errorf("a sample of a free GPU: %+v, %v", free.Holding, err)
	}
}

// FuzzDecodeSample: a peer's sample, whatever its bytes, decodes or fails
// with an error, never a panic; one that decodes encodes and decodes again
// to the same holding.
func FuzzDecodeSample(f *testing.F) {
	f.Add([]byte(oldSample))
	f.Add([]byte(`{"gpus":[{"uuid":"GPU-0","job":"j"}],"holding":{"gpus":{"GPU-0":{"kind":"job","id":"j"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Sample
		if json.Unmarshal(data, &s) != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var again Sample
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if d := cmp.Diff(s.Holding, again.Holding, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("holding changed in a round trip (-first +second):\n%s", d)
		}
	})
}

// BenchmarkDecodeSample reads one sample of 8 GPUs with 4 processes each,
// all held: as a new agent writes it (holding beside the readings), as an
// old one did (holders inside them), and, for comparison, the new one by
// plain decoding without the old form's check.
func BenchmarkDecodeSample(b *testing.B) {
	var s Sample
	var old struct {
		GPUs []legacyGPU `json:"gpus"`
	}
	for i := range 8 {
		uuid := fmt.Sprintf("GPU-%04d", i)
		g := gpu.Stats{Index: i, UUID: uuid, UtilPercent: 50, Throttle: []string{}}
		lg := legacyGPU{UUID: uuid, Job: "job-1"}
		s.Holding.HoldGPU(uuid, alloc.Holder{Kind: alloc.Job, ID: "job-1"})
		for k := range 4 {
			pid := uint32(100 + 4*i + k)
			g.Processes = append(g.Processes, gpu.Process{PID: pid, MemBytes: 1 << 30})
			s.Holding.HoldProc(pid, alloc.Holder{Kind: alloc.Job, ID: "job-1", Member: "ALICE"})
			lg.Processes = append(lg.Processes, struct {
				PID    uint32 `json:"pid"`
				Job    string `json:"job"`
				Owner  string `json:"owner"`
				Holder string `json:"holder"`
			}{PID: pid, Job: "job-1", Owner: "ALICE"})
		}
		s.GPUs = append(s.GPUs, g)
		old.GPUs = append(old.GPUs, lg)
	}
	newData, _ := json.Marshal(s)
	oldData, _ := json.Marshal(old)
	type plain Sample
	for _, c := range []struct {
		name string
		data []byte
		into func() any
	}{
		{"new", newData, func() any { return new(Sample) }},
		{"old", oldData, func() any { return new(Sample) }},
		{"new-plain", newData, func() any { return new(plain) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := json.Unmarshal(c.data, c.into()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.data)), "json-bytes")
		})
	}
}
