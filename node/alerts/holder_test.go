package alerts

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// On a Slurm compute node the GPUs a Slurm job holds are no grant of the
// node's ledger: the sample names them (Job for a job labpool launched
// through the cluster's agent, Holder always), and an idle one is one
// alert naming the Slurm job, its name and owner.
func TestIdleSlurmJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const job = "job-5f3a9c0e7d21b4a68e90c2f1" // namedInputs: train-resnet of alice
		rule := Rule{ID: RuleIdleGranted, Metric: MetricGrantedUtil, Op: "<", Threshold: 5, ForSeconds: 1800, Severity: Warning, Enabled: true}
		r := newRigWith(t, namedInputs{&fakeInputs{grants: map[string]string{}}}, rule)
		idle := func() agent.Sample {
			s123 := alloc.Holder{Kind: alloc.SlurmJob, ID: "123", Name: "slurm job 123", Job: job}
			return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{
				{Index: 0, UUID: "GPU-0"}, {Index: 1, UUID: "GPU-1"}, {Index: 2, UUID: "GPU-2"}, {Index: 3, UUID: "GPU-3"},
			}, Holding: alloc.Holding{GPUs: map[string]alloc.Holder{"GPU-0": s123, "GPU-1": s123,
				"GPU-2": {Kind: alloc.SlurmJob, ID: "77", Name: "slurm job 77"}}}}
		}
		r.feed(31*time.Minute, idle)
		as := r.sink.all()
		slices.SortFunc(as, func(a, b Alert) int { return *a.GPU - *b.GPU })
		want := []struct {
			job, holder, msg string
			gpus             []int
		}{
			{job, "slurm job 123", "idle allocation: slurm job 123 (alice's train-resnet) holds GPUs 0, 1, under 5% utilization for 30m0s", []int{0, 1}},
			{"", "slurm job 77", "idle allocation: slurm job 77 holds GPU 2, under 5% utilization for 30m0s", []int{2}},
		}
		if len(as) != len(want) {
			t.Fatalf("recorded %d alerts: %+v; want %d", len(as), as, len(want))
		}
		for i, w := range want {
			a := as[i]
			if a.Job != w.job || a.Holder != w.holder || a.Message != w.msg || !slices.Equal(a.GPUs, w.gpus) {
				t.Errorf("alert %d: job %q holder %q GPUs %v %q\n want %q %q %v %q", i, a.Job, a.Holder, a.GPUs, a.Message, w.job, w.holder, w.gpus, w.msg)
			}
		}
	})
}

func TestHolderLabel(t *testing.T) {
	for _, tt := range []struct{ holder, job, owner, want string }{
		{"slurm job 123", "train", "alice", "slurm job 123 (alice's train)"},
		{"slurm job 123", "train", "", "slurm job 123 (train)"},
		{"slurm job 123", "", "", "slurm job 123"},
	} {
		if got := holderLabel(tt.holder, tt.job, tt.owner); got != tt.want {
			t.Errorf("holderLabel(%q, %q, %q) = %q; want %q", tt.holder, tt.job, tt.owner, got, tt.want)
		}
	}
}
