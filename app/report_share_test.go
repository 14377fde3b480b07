package app

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/store"
)

// shareReplica is alpha with two GPUs, an A100 in MIG mode (GPU 0, its
// instances MIG-3g of 3g.40gb and MIG-1g of 1g.10gb) and an A30 (GPU 1),
// both at 100% and 300 W for the last hour of 1 min points, and the job
// records js of alpha's (each proven by mike), ended at now after an
// hour.
func shareReplica(t *testing.T, now time.Time, js ...jobs.Job) (*Reader, *store.DB, []jobs.Job) {
	t.Helper()
	db := openDB(t)
	mike, mikeID := memberKey(4)
	putMember(t, db, mikeID, "mike", false)
	putMember(t, db, alphaID, "alpha", false)
	a100 := gpu.Info{Index: 0, UUID: "GPU-0", Name: "NVIDIA A100-SXM4-80GB", MIG: &gpu.MIG{Supported: true, Enabled: true, Instances: []gpu.MIGInstance{
		{UUID: "MIG-3g", Name: "NVIDIA A100-SXM4-80GB MIG 3g.40gb"}, {UUID: "MIG-1g", Name: "NVIDIA A100-SXM4-80GB MIG 1g.10gb"}}}}
	a30 := gpu.Info{Index: 1, UUID: "GPU-1", Name: "NVIDIA A30"}
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha", GPUs: []gpu.Info{a100, a30}}})
	stats := []gpu.Stats{{Index: 0, UUID: "GPU-0", Name: a100.Name, UtilPercent: 100, PowerW: 300}, {Index: 1, UUID: "GPU-1", Name: a30.Name, UtilPercent: 100, PowerW: 300}}
	for m := now.Add(-70 * time.Minute); m.Before(now); m = m.Add(time.Minute) {
		p := history.FromSample(agent.Sample{Time: m, GPUs: stats})
		p.N = 60
		for i := range p.GPUs {
			p.GPUs[i].N = 60
		}
		putRecord(t, db, alphaID, history.KindSample1m, history.Key(m), m, history.Encode(p))
	}
	putRecord(t, db, alphaID, history.KindLive, "", now, mustJSON(t, agent.Sample{Time: now, GPUs: stats}))
	started, finished := now.Add(-time.Hour), now
	var out []jobs.Job
	for _, j := range js {
		j.Node, j.State, j.Started, j.Finished = alphaID, jobs.Exited, &started, &finished
		j = proven(t, mike, mikeID, alphaID, j)
		putRecord(t, db, alphaID, KindJob, j.ID, finished, mustJSON(t, j))
		out = append(out, j)
	}
	r := NewReader(db, Self{ID: selfID, Name: "self"})
	r.now = func() time.Time { return now }
	return r, db, out
}

// A share counts its fraction of the GPU's hour, of its use and of its
// energy; a MIG instance its slices over its GPU's (3g.40gb of an A100's
// 7: 3/7; an instance the node no longer lists, its spec's profile: 2g of
// an A30's 4); a whole GPU 1.
func TestReportSharesAndMIG(t *testing.T) {
	now := t0.Truncate(time.Hour)
	r, _, js := shareReplica(t, now,
		jobs.Job{Name: "quarter", GPUIndexes: []int{1}, GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1, GPUShare: 0.25}},
		jobs.Job{Name: "mig3", GPUIndexes: []int{0}, GPUs: []string{"MIG-3g"}, Spec: jobs.Spec{MIGIDs: []string{"MIG-3g"}}},
		jobs.Job{Name: "mig3+1", GPUIndexes: []int{0}, GPUs: []string{"MIG-3g", "MIG-1g"}, Spec: jobs.Spec{MIGIDs: []string{"MIG-3g", "MIG-1g"}}},
		jobs.Job{Name: "gone", GPUIndexes: []int{1}, GPUs: []string{"MIG-old"}, Spec: jobs.Spec{MIGProfile: "2g.12gb"}},
		jobs.Job{Name: "whole", GPUIndexes: []int{0, 1}, GPUs: []string{"GPU-0", "GPU-1"}, Spec: jobs.Spec{GPUs: 2}})
	want := map[string]float64{js[0].ID: 0.25, js[1].ID: 3.0 / 7, js[2].ID: 4.0 / 7, js[3].ID: 2.0 / 4, js[4].ID: 2}
	rep, err := r.Report(context.Background(), ReportRequest{Since: 2 * 3600, By: ReportByJob})
	if err != nil || len(rep.Rows) != len(want) {
		t.Fatalf("report %+v, %v", rep.Rows, err)
	}
	const measured = 3599.0 / 3600 // the last second has no sample yet
	for _, row := range rep.Rows {
		h := want[row.Key]
		if math.Abs(row.GPUHoursGranted-h) > 1e-9 || math.Abs(row.GPUHoursUsed-h*measured) > 1e-9 || math.Abs(row.EnergyKWh-0.3*h*measured) > 1e-9 {
			t.Errorf("%s: %v GPU-h granted, %v used, %v kWh; want %v, %v, %v", row.Label, row.GPUHoursGranted, row.GPUHoursUsed, row.EnergyKWh, h, h*measured, 0.3*h*measured)
		}
	}
	if len(rep.Adjusted) != 0 {
		t.Errorf("adjusted %+v, want none", rep.Adjusted)
	}
	list, err := r.Jobs(context.Background(), true)
	if err != nil || len(list) != len(want) {
		t.Fatalf("Jobs = %+v, %v", list, err)
	}
	for _, j := range list {
		if math.Abs(j.GPUWeight-want[j.ID]) > 1e-9 || math.Abs(j.GPUSeconds-3600*want[j.ID]) > 1e-6 {
			t.Errorf("Jobs: %s at %v GPUs, %v GPU-seconds; want %v", j.Name, j.GPUWeight, j.GPUSeconds, want[j.ID])
		}
	}
}

// Attack: mike's records claim a share of 5, a negative share, a NaN-free
// but absurd one, a MIG profile of more slices than the GPU has, and one
// GPU listed three times, and 5,000 times. None counts more than the GPUs it names for the
// hour, none counts less than nothing, and the report names each rule.
func TestReportShareClaimsClamped(t *testing.T) {
	now := t0.Truncate(time.Hour)
	r, _, js := shareReplica(t, now,
		jobs.Job{Name: "five", GPUIndexes: []int{1}, GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1, GPUShare: 5}},
		jobs.Job{Name: "negative", GPUIndexes: []int{1}, GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1, GPUShare: -3}},
		jobs.Job{Name: "huge", GPUIndexes: []int{1}, GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1, GPUShare: 1e300}},
		jobs.Job{Name: "mig9", GPUIndexes: []int{1}, GPUs: []string{"MIG-x"}, Spec: jobs.Spec{MIGProfile: "9g.90gb"}},
		jobs.Job{Name: "thrice", GPUIndexes: []int{1, 1, 1}, GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1}},
		jobs.Job{Name: "many", GPUIndexes: slices.Repeat([]int{1}, 5000), GPUs: []string{"GPU-1"}, Spec: jobs.Spec{GPUs: 1}})
	rules := map[string]string{js[0].ID: RuleShareRange, js[1].ID: RuleShareRange, js[2].ID: RuleShareRange, js[3].ID: RuleMIGSlices, js[4].ID: RuleGPUOnce, js[5].ID: RuleGPUOnce}
	rep, err := r.Report(context.Background(), ReportRequest{Since: 2 * 3600, By: ReportByJob})
	if err != nil || len(rep.Rows) != len(js) {
		t.Fatalf("report %+v, %v", rep.Rows, err)
	}
	for _, row := range rep.Rows {
		if math.Abs(row.GPUHoursGranted-1) > 1e-9 || row.GPUHoursUsed > 1+1e-9 || row.EnergyKWh > 0.3+1e-9 {
			t.Errorf("%s: %v GPU-h granted, %v used, %v kWh; want its one GPU for the hour, no more", row.Label, row.GPUHoursGranted, row.GPUHoursUsed, row.EnergyKWh)
		}
	}
	if math.Abs(rep.Totals.GPUHoursGranted-6) > 1e-9 {
		t.Errorf("totals %v GPU-h, want 6", rep.Totals.GPUHoursGranted)
	}
	got := map[string]string{}
	for _, a := range rep.Adjusted {
		got[a.Job] = a.Rule
	}
	for id, rule := range rules {
		if got[id] != rule {
			t.Errorf("job %s adjusted by %q, want %q (all: %+v)", id, got[id], rule, rep.Adjusted)
		}
	}
}
