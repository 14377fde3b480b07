package alerts

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
)

// namedInputs are fakeInputs that also name jobs (JobNames).
type namedInputs struct{ *fakeInputs }

func (namedInputs) JobNames(job string) (string, string) {
	if job == "job-5f3a9c0e7d21b4a68e90c2f1" {
		return "train-resnet", "alice"
	}
	return "", ""
}

// hotSample is GPU 0 at temp °C, throttled for heat and marked warning (as
// NVML's hw_thermal_slowdown makes it), GPU 1 cool.
func hotSample(temp float64) func() agent.Sample {
	return func() agent.Sample {
		return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{
			{Index: 0, UUID: "GPU-a", TempC: temp, UtilPercent: 100, Health: "warning", HealthReason: "throttled: hw_thermal_slowdown",
				Throttle: []string{"hw_thermal_slowdown"}},
			{Index: 1, UUID: "GPU-b", TempC: 40, UtilPercent: 100, Health: "ok"},
		}}
	}
}

func coolSample() agent.Sample {
	return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{
		{Index: 0, UUID: "GPU-a", TempC: 50, UtilPercent: 100, Health: "ok"},
		{Index: 1, UUID: "GPU-b", TempC: 40, UtilPercent: 100, Health: "ok"},
	}}
}

func TestHotGPUIsOneAlert(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t) // the default rules: temperature, throttle and health all see GPU 0
		r.feed(10*time.Minute, hotSample(91))
		ids := map[string]bool{}
		for _, a := range r.sink.all() {
			ids[a.ID] = true
		}
		if len(ids) != 1 {
			t.Fatalf("a hot GPU recorded %d alerts; want one incident: %+v", len(ids), r.sink.all())
		}
		act := r.e.Active()
		if len(act) != 1 {
			t.Fatalf("active: %+v; want one", act)
		}
		a := act[0]
		if a.Rule != RuleGPUTemp || a.Severity != Critical || *a.GPU != 0 {
			t.Errorf("the incident is %s (%s) on GPU %d; want the worst rule, %s (critical), on GPU 0", a.Rule, a.Severity, *a.GPU, RuleGPUTemp)
		}
		if !slices.Equal(a.Folded, []string{RuleGPUHealth, RuleThrottle}) {
			t.Errorf("folded %v; want the health and throttle rules folded in", a.Folded)
		}
		for _, part := range []string{"GPU 0 at 91 °C", "health is warning", "throttled (hw_thermal_slowdown)"} {
			if !strings.Contains(a.Message, part) {
				t.Errorf("message %q does not say %q", a.Message, part)
			}
		}
		// The hooks (webhook) heard of it when it fired (a warning: health
		// fires at once) and when it rose to critical: never once per rule.
		if h := r.hooked(); len(h) != 2 || h[0].Severity != Warning || h[1].Severity != Critical || h[0].ID != h[1].ID {
			t.Errorf("hooks heard %+v; want the firing and the rise to critical of one incident", h)
		}
		r.feed(2*time.Minute, coolSample)
		if len(r.e.Active()) != 0 {
			t.Fatalf("still active after cooling: %+v", r.e.Active())
		}
		as := r.sink.all()
		last := as[len(as)-1]
		if last.ID != a.ID || last.ClearedAt == nil || last.Value != 91 {
			t.Errorf("cleared as %+v; want %s cleared with its peak 91", last, a.ID)
		}
		// Cooling, the temperature's condition ends before the throttle's:
		// the incident falls to warning, then clears.
		if h := r.hooked(); len(h) != 4 || h[2].Was != Critical || h[2].Severity != Warning || h[3].ClearedAt == nil {
			t.Errorf("hooks heard %+v; want the fall to warning third, the clearing fourth", h)
		}
	})
}

func TestIdleJobIsOneAlertListingItsGPUs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const job = "job-5f3a9c0e7d21b4a68e90c2f1"
		rule := Rule{ID: RuleIdleGranted, Metric: MetricGrantedUtil, Op: "<", Threshold: 5, ForSeconds: 1800, Severity: Warning, Enabled: true}
		in := &fakeInputs{grants: map[string]string{}}
		r := newRigWith(t, namedInputs{in}, rule)
		in.grants = map[string]string{}
		uuids := []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5"}
		for _, u := range uuids[:5] {
			in.grants[u] = job
		}
		idle := func() agent.Sample {
			s := agent.Sample{Time: time.Now()}
			for i, u := range uuids {
				s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: u, UtilPercent: 1})
			}
			return s
		}
		r.feed(31*time.Minute, idle)
		as := r.sink.all()
		if len(as) != 1 {
			t.Fatalf("an idle 5-GPU job recorded %d alerts: %+v; want one", len(as), as)
		}
		a := as[0]
		if a.Job != job || !slices.Equal(a.GPUs, []int{0, 1, 2, 3, 4}) {
			t.Errorf("alert job %q GPUs %v; want %s on GPUs 0-4", a.Job, a.GPUs, job)
		}
		want := "idle allocation: job train-resnet of alice holds GPUs 0, 1, 2, 3, 4, under 5% utilization for 30m0s"
		if a.Message != want {
			t.Errorf("message %q\n want %q", a.Message, want)
		}
		if strings.Contains(a.Message, job) {
			t.Errorf("message names the job by ID: %q", a.Message)
		}
		// The job ends: one clearing.
		in.mu.Lock()
		in.grants = map[string]string{}
		in.mu.Unlock()
		r.feed(2*time.Minute, idle)
		if f, c := r.sink.count(RuleIdleGranted); f != 1 || c != 1 {
			t.Errorf("fired %d, cleared %d; want 1, 1", f, c)
		}
	})
}

func TestIncidentMutedOnlyWhenAllItsRulesAre(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		zero := 0
		if err := r.e.Mute(Mute{Node: selfID, Rule: RuleGPUHealth, GPU: &zero, Until: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		r.feed(3*time.Minute, hotSample(91))
		act := r.e.Active()
		if len(act) != 1 || act[0].Muted || act[0].Rule != RuleGPUTemp {
			t.Fatalf("active %+v; want the temperature incident, not muted (only health is)", act)
		}
		if h := r.hooked(); len(h) != 1 || h[0].Severity != Critical {
			t.Errorf("hooks heard %+v; want the incident once, when its unmuted rule fired", h)
		}
	})
}

func TestRestoreIdleJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &fakeInputs{grants: map[string]string{"GPU-a": "j1", "GPU-b": "j1"}}
		rule := Rule{ID: RuleIdleGranted, Metric: MetricGrantedUtil, Op: "<", Threshold: 5, ForSeconds: 1800, Severity: Warning, Enabled: true}
		r := newRigWith(t, in, rule)
		zero := 0
		old := Alert{ID: "gpu-idle-allocation.job-j1.1", Node: selfID, Rule: RuleIdleGranted, Severity: Warning, GPU: &zero,
			GPUs: []int{0, 1}, Job: "j1", Value: 1, FiredAt: time.Now().Add(-time.Hour)}
		r.e.Restore([]Alert{old})
		idle := func() agent.Sample {
			return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}}
		}
		r.feed(10*time.Second, idle)
		if n := len(r.sink.all()); n != 0 {
			t.Fatalf("a restored incident still firing was saved again: %+v", r.sink.all())
		}
		in.mu.Lock()
		in.grants = map[string]string{}
		in.mu.Unlock()
		r.feed(2*time.Minute, idle)
		as := r.sink.all()
		if len(as) != 1 || as[0].ID != old.ID || as[0].ClearedAt == nil {
			t.Fatalf("restored incident cleared as %+v; want %s cleared once", as, old.ID)
		}
	})
}

// Alerts an earlier version left firing, one per rule on one GPU, become
// one incident: the first keeps it (the other's rule folded in), the other
// clears at the first evaluation, without the hooks hearing of it.
func TestRestoreFoldsOneAlertPerRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		zero := 0
		fired := time.Now().Add(-time.Hour)
		temp := Alert{ID: "gpu-temp.gpu0.1", Node: selfID, Rule: RuleGPUTemp, Severity: Critical, GPU: &zero, Value: 91, FiredAt: fired}
		thr := Alert{ID: "gpu-throttle.gpu0.2", Node: selfID, Rule: RuleThrottle, Severity: Warning, GPU: &zero, Value: 1, FiredAt: fired}
		r.e.Restore([]Alert{temp, thr})
		r.feed(time.Second, hotSample(91))
		act := r.e.Active()
		if len(act) != 1 || act[0].ID != temp.ID {
			t.Fatalf("active %+v; want the one incident %s", act, temp.ID)
		}
		var cleared []string
		for _, a := range r.sink.all() {
			if !a.Active() {
				cleared = append(cleared, a.ID)
			}
		}
		if !slices.Equal(cleared, []string{thr.ID}) {
			t.Errorf("cleared %v; want %s, folded into %s", cleared, thr.ID, temp.ID)
		}
		if !slices.Contains(act[0].Folded, RuleThrottle) {
			t.Errorf("folded %v; want the throttle rule", act[0].Folded)
		}
		if h := r.hooked(); len(h) != 0 {
			t.Errorf("hooks heard %+v", h)
		}
	})
}

// healthSample is GPU 0 with health h.
func healthSample(h string) func() agent.Sample {
	return func() agent.Sample {
		return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-a", TempC: 50, UtilPercent: 100, Health: h}}}
	}
}

// An incident that escalates is heard once for the rise, keeping its ID: a
// GPU whose health goes from warning to quarantined under a health rule
// with a duration used to end its alert (heard as cleared) and fire a new
// one (heard again), two posts for one change.
func TestEscalationIsHeardOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rule := Rule{ID: RuleGPUHealth, Metric: MetricHealth, Op: ">=", Threshold: 1, ForSeconds: 3, Severity: Critical, Enabled: true}
		r := newRig(t, rule)
		r.feed(10*time.Second, healthSample("warning"))
		r.feed(10*time.Second, healthSample("quarantined"))
		h := r.hooked()
		if len(h) != 2 || h[0].Severity != Warning || h[1].Severity != Critical || h[0].ID != h[1].ID || h[1].ClearedAt != nil {
			t.Fatalf("hooks heard %+v; want the firing (warning) and the rise to critical of one incident", h)
		}
		if h[1].Was != Warning || !strings.Contains(h[1].Message, "health is quarantined") {
			t.Errorf("the rise says was %q, %q; want was warning, the new health", h[1].Was, h[1].Message)
		}
		ids := map[string]bool{}
		for _, a := range r.sink.all() {
			ids[a.ID] = true
		}
		if len(ids) != 1 {
			t.Errorf("recorded %d alerts for one incident: %+v", len(ids), r.sink.all())
		}
		r.feed(10*time.Second, healthSample("quarantined"))
		if h := r.hooked(); len(h) != 2 {
			t.Errorf("heard %d events; want no repeat while nothing changes", len(h))
		}
	})
}

// throttledSample is GPU 0 at temp °C, throttled for heat, its health ok.
func throttledSample(temp float64) func() agent.Sample {
	return func() agent.Sample {
		return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-a", TempC: temp, UtilPercent: 100, Health: "ok",
			Throttle: []string{"hw_thermal_slowdown"}}}}
	}
}

// An incident goes down when its worst condition ends and a lesser one
// remains: the temperature back under its threshold, the GPU still
// throttled, is a warning that says what ended, heard once; it clears when
// the last condition does.
func TestIncidentLowersWhenItsWorstConditionEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule, Rule{ID: RuleThrottle, Metric: MetricThrottle, Op: ">", Threshold: 0, ForSeconds: 300, Severity: Warning, Enabled: true})
		r.feed(6*time.Minute, throttledSample(91))
		act := r.e.Active()
		if len(act) != 1 || act[0].Severity != Critical || act[0].Rule != RuleGPUTemp {
			t.Fatalf("active %+v; want the critical temperature incident", act)
		}
		id := act[0].ID
		r.feed(2*time.Minute, throttledSample(70))
		act = r.e.Active()
		if len(act) != 1 || act[0].ID != id || act[0].Severity != Warning || act[0].Rule != RuleThrottle {
			t.Fatalf("active %+v; want incident %s lowered to the throttle warning", act, id)
		}
		if !strings.Contains(act[0].Message, "throttled") || !strings.Contains(act[0].Message, "ended: GPU 0 at 91 °C") {
			t.Errorf("message %q; want the throttling, and that the temperature's condition ended", act[0].Message)
		}
		h := r.hooked()
		if len(h) != 2 || h[1].ID != id || h[1].Severity != Warning || h[1].Was != Critical || h[1].ClearedAt != nil {
			t.Fatalf("hooks heard %+v; want the firing and the fall to warning", h)
		}
		r.feed(2*time.Minute, throttledSample(70))
		if h := r.hooked(); len(h) != 2 {
			t.Errorf("heard %d events; want no repeat of the fall", len(h))
		}
		r.feed(3*time.Minute, coolSample)
		if len(r.e.Active()) != 0 {
			t.Fatalf("still active once every condition ended: %+v", r.e.Active())
		}
		h = r.hooked()
		if len(h) != 3 || h[2].ID != id || h[2].ClearedAt == nil {
			t.Errorf("hooks heard %+v; want the clearing third", h)
		}
		as := r.sink.all()
		if last := as[len(as)-1]; last.Rule != RuleGPUTemp || last.Severity != Critical || last.Value != 91 {
			t.Errorf("the incident closed as %+v; want it to keep its worst, the temperature at 91", last)
		}
	})
}

// A restored incident whose last record was a change of severity (Was
// set) is not heard again when its next record changes something else.
func TestRestoredChangeIsNotHeardAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule, Rule{ID: RuleThrottle, Metric: MetricThrottle, Op: ">", Threshold: 0, ForSeconds: 10, Severity: Warning, Enabled: true})
		zero := 0
		old := Alert{ID: "gpu-temp.gpu0.1", Node: selfID, Rule: RuleGPUTemp, Severity: Critical, Was: Warning, GPU: &zero, Value: 91,
			Message: "GPU 0 at 91 °C, over 85 °C for 2m0s", FiredAt: time.Now().Add(-time.Hour)}
		r.e.Restore([]Alert{old})
		r.feed(30*time.Second, throttledSample(91)) // the throttle folds in: a new record, no change of severity
		as := r.sink.all()
		if len(as) == 0 || as[len(as)-1].Was != "" {
			t.Errorf("records %+v; want the fold recorded without a change of severity", as)
		}
		if h := r.hooked(); len(h) != 0 {
			t.Errorf("hooks heard %+v; want nothing (no change of severity)", h)
		}
	})
}
