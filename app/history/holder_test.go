package history

import (
	"testing"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
)

// A GPU a Slurm job holds on a compute node counts as granted: idle when
// its processes idle, never "busy outside labpool" for them.
func TestSlurmHolderIsAGrant(t *testing.T) {
	s := agent.Sample{Time: time.Unix(1e9, 0), GPUs: []gpu.Stats{
		{Index: 0, UtilPercent: 0, Holder: "slurm job 7", Processes: []gpu.Process{{PID: 9, Holder: "slurm job 7"}}},
		{Index: 1, UtilPercent: 0, Job: "job-a", Holder: "slurm job 8", Processes: []gpu.Process{{PID: 10, Job: "job-a", Holder: "slurm job 8"}}},
		{Index: 2, UtilPercent: 80, Holder: "slurm job 7", Processes: []gpu.Process{{PID: 9, Holder: "slurm job 7"}}},
		{Index: 3, UtilPercent: 0, Processes: []gpu.Process{{PID: 11}}},
	}}
	p := FromSample(s)
	want := []struct{ busy, idle float64 }{{0, 1}, {0, 1}, {1, 0}, {1, 0}}
	for i, w := range want {
		if g := p.GPUs[i]; g.Busy != w.busy || g.IdleGranted != w.idle {
			t.Errorf("GPU %d: busy %v idle granted %v; want %v, %v", i, g.Busy, g.IdleGranted, w.busy, w.idle)
		}
	}
}
