package slurm

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

func TestIdleWatchWarnsOncePerStretch(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sample := func(util float64) []gpu.Stats {
		return []gpu.Stats{
			{Index: 1, UUID: "GPU-1", UtilPercent: util, Processes: []gpu.Process{{PID: 9}}},
			{Index: 0, UUID: "GPU-0", UtilPercent: 0},
			{Index: 2, UUID: "GPU-2", UtilPercent: 50},
			{Index: 3, UUID: "GPU-3"},
		}
	}
	s123 := alloc.Holder{Kind: alloc.SlurmJob, ID: "123", Name: "slurm job 123", Job: "job-a"}
	held := alloc.Holding{
		GPUs: map[string]alloc.Holder{"GPU-1": s123, "GPU-0": s123, "GPU-2": {Kind: alloc.SlurmJob, ID: "77", Name: "slurm job 77"},
			"GPU-3": {Kind: alloc.Job, ID: "docker-job"}}, // the node's own job: its reclaim is the job manager's
		Procs: map[uint32]alloc.Holder{9: {Kind: alloc.SlurmJob, ID: "123", Name: "slurm job 123", Job: "job-a", Member: "alice-id"}},
	}
	var w IdleWatch
	const limit = time.Hour
	var got []IdleWarning
	for s := time.Duration(0); s <= 2*limit; s += time.Minute {
		got = append(got, w.Observe(t0.Add(s), sample(1), held, limit, 5)...)
	}
	want := []IdleWarning{{Holder: "slurm job 123", Job: "job-a", Owner: "alice-id", GPUs: []int{0, 1}, Since: t0}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("two idle hours (-want +got):\n%s", d)
	}
	// Busy once: a new stretch, warned again after the policy's time.
	w.Observe(t0.Add(3*limit), sample(90), held, limit, 5)
	if n := len(w.Observe(t0.Add(3*limit+time.Second), sample(1), held, limit, 5)); n != 0 {
		t.Errorf("warned at the new stretch's start: %d", n)
	}
	if got := w.Observe(t0.Add(4*limit+time.Second), sample(1), held, limit, 5); len(got) != 1 || !got[0].Since.Equal(t0.Add(3*limit+time.Second)) {
		t.Errorf("after a new idle hour: %+v; want one warning since the stretch began", got)
	}
	// Policy off: nothing.
	var off IdleWatch
	for s := time.Duration(0); s <= 2*limit; s += time.Minute {
		if got := off.Observe(t0.Add(s), sample(1), held, 0, 5); len(got) != 0 {
			t.Fatalf("policy off warned: %+v", got)
		}
	}
}
