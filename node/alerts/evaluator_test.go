package alerts

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
)

const selfID = "SELF-AAAA-AAAA-AAAA"

// fakeSink records every alert saved, in order.
type fakeSink struct {
	mu    sync.Mutex
	saved []Alert
}

func (s *fakeSink) SaveAlert(a Alert) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved = append(s.saved, a)
	return nil
}

func (s *fakeSink) all() []Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Alert(nil), s.saved...)
}

// fired and cleared count the saved firings and clearings of rule.
func (s *fakeSink) count(rule string) (fired, cleared int) {
	for _, a := range s.all() {
		if a.Rule != rule {
			continue
		}
		if a.Active() {
			fired++
		} else {
			cleared++
		}
	}
	return fired, cleared
}

// fakeInputs are fixed grants, folders and peers.
type fakeInputs struct {
	mu      sync.Mutex
	grants  map[string]string
	folders []Folder
	peers   []PeerReading
}

func (f *fakeInputs) Grants() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.grants
}
func (f *fakeInputs) Folders() []Folder { return f.folders }
func (f *fakeInputs) Peers() []PeerReading {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]PeerReading(nil), f.peers...)
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// rig runs an evaluator over a sample channel inside a synctest bubble.
type rig struct {
	t    *testing.T
	e    *Evaluator
	sink *fakeSink
	in   *fakeInputs
	ch   chan agent.Sample
	hook []Alert
	mu   sync.Mutex
}

func newRig(t *testing.T, rules ...Rule) *rig {
	return newRigWith(t, &fakeInputs{grants: map[string]string{}}, rules...)
}

// newRigWith is newRig over in (a *fakeInputs, or one wrapping it).
func newRigWith(t *testing.T, in Inputs, rules ...Rule) *rig {
	fi, ok := in.(*fakeInputs)
	if !ok {
		fi = in.(namedInputs).fakeInputs
	}
	r := &rig{t: t, sink: &fakeSink{}, in: fi, ch: make(chan agent.Sample)}
	r.e = NewEvaluator(selfID, r.sink, discard(), func(a Alert) {
		r.mu.Lock()
		r.hook = append(r.hook, a)
		r.mu.Unlock()
	})
	if len(rules) > 0 {
		if err := r.e.SetRules(rules); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.e.Run(ctx, r.ch, in) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

func (r *rig) hooked() []Alert {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Alert(nil), r.hook...)
}

// feed sends one sample a second for d, each made by mk, and waits for
// the evaluator to take each.
func (r *rig) feed(d time.Duration, mk func() agent.Sample) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(time.Second)
		r.ch <- mk()
		synctest.Wait()
	}
}

func tempSample(temps ...float64) func() agent.Sample {
	return func() agent.Sample {
		s := agent.Sample{Time: time.Now()}
		for i, c := range temps {
			s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: "GPU-" + string(rune('a'+i)), TempC: c, UtilPercent: 50})
		}
		return s
	}
}

func utilSample(util float64) func() agent.Sample {
	return func() agent.Sample {
		return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-a", UtilPercent: util, TempC: 40}}}
	}
}

var tempRule = Rule{ID: RuleGPUTemp, Metric: MetricTemp, Op: ">", Threshold: 85, ForSeconds: 120, Severity: Critical, Enabled: true}

func TestTemperatureFiresAfterItsDurationNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule)
		r.feed(119*time.Second, tempSample(90, 40))
		if f, _ := r.sink.count(RuleGPUTemp); f != 0 {
			t.Fatalf("fired after 119 s over 85 °C; the rule says 120 s")
		}
		r.feed(2*time.Second, tempSample(90, 40))
		as := r.sink.all()
		if len(as) != 1 {
			t.Fatalf("after 121 s: %d alerts saved, want 1: %+v", len(as), as)
		}
		a := as[0]
		if a.Severity != Critical || a.GPU == nil || *a.GPU != 0 || a.Node != selfID || a.Value != 90 || !a.Active() {
			t.Errorf("alert = %+v; want critical, GPU 0, this node, value 90, active", a)
		}
		if !strings.Contains(a.Message, "GPU 0 at 90 °C") {
			t.Errorf("message %q does not say which GPU and how hot", a.Message)
		}
		if h := r.hooked(); len(h) != 1 {
			t.Errorf("hooks told of %d alerts, want 1", len(h))
		}
	})
}

func TestTemperatureClearsAfterHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule)
		r.feed(125*time.Second, tempSample(95))
		r.feed(20*time.Second, tempSample(60))
		if _, c := r.sink.count(RuleGPUTemp); c != 0 {
			t.Fatalf("cleared after 20 s back under; the hold is %v", tempRule.Hold())
		}
		r.feed(15*time.Second, tempSample(60))
		f, c := r.sink.count(RuleGPUTemp)
		if f != 1 || c != 1 {
			t.Fatalf("fired %d, cleared %d; want 1 and 1", f, c)
		}
		as := r.sink.all()
		last := as[len(as)-1]
		if last.ID != as[0].ID || last.ClearedAt == nil || last.Value != 95 {
			t.Errorf("clearing = %+v; want the same ID, a clearing time, the peak 95", last)
		}
		if len(r.e.Active()) != 0 {
			t.Errorf("still active after clearing: %+v", r.e.Active())
		}
	})
}

func TestNoFlappingOnASingleSample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule)
		// A spike of one sample never fires, however often it comes.
		for range 10 {
			r.feed(30*time.Second, tempSample(60))
			r.feed(time.Second, tempSample(99))
		}
		if f, _ := r.sink.count(RuleGPUTemp); f != 0 {
			t.Fatalf("single-sample spikes fired the alert")
		}
		// The condition must hold throughout: a dip restarts the count.
		r.feed(60*time.Second, tempSample(90))
		r.feed(time.Second, tempSample(60))
		r.feed(119*time.Second, tempSample(90))
		if f, _ := r.sink.count(RuleGPUTemp); f != 0 {
			t.Fatalf("fired 119 s after a dip; the rule says 120 s")
		}
		r.feed(2*time.Second, tempSample(90))
		f, c := r.sink.count(RuleGPUTemp)
		if f != 1 || c != 0 {
			t.Fatalf("120 s over after a dip: fired %d, cleared %d; want 1, 0", f, c)
		}
		// A dip of one sample does not clear a firing alert.
		for range 5 {
			r.feed(time.Second, tempSample(60))
			r.feed(10*time.Second, tempSample(90))
		}
		if f, c := r.sink.count(RuleGPUTemp); f != 1 || c != 0 {
			t.Fatalf("one-sample dips while firing: fired %d, cleared %d; want 1, 0", f, c)
		}
	})
}

func TestMute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule)
		zero := 0
		r.e.Mute(Mute{Node: selfID, Rule: RuleGPUTemp, GPU: &zero, Until: time.Now().Add(time.Hour)})
		r.feed(125*time.Second, tempSample(90, 90))
		var muted, loud int
		for _, a := range r.sink.all() {
			if a.Muted {
				muted++
				if *a.GPU != 0 {
					t.Errorf("GPU %d's alert muted; the mute is for GPU 0", *a.GPU)
				}
			} else {
				loud++
			}
		}
		if muted != 1 || loud != 1 {
			t.Fatalf("muted %d, not muted %d; want 1 and 1 (GPU 0 muted, GPU 1 not)", muted, loud)
		}
		if h := r.hooked(); len(h) != 1 || *h[0].GPU != 1 {
			t.Errorf("hooks told of %+v; want GPU 1's alert only", h)
		}
		// Muting a firing alert saves it again, marked; unmuting too.
		n := len(r.sink.all())
		r.e.Mute(Mute{Node: selfID, Rule: RuleGPUTemp, Until: time.Now().Add(time.Hour)})
		if as := r.sink.all(); len(as) != n+1 || !as[n].Muted || *as[n].GPU != 1 {
			t.Fatalf("after muting the rule on every GPU: %+v", as[n:])
		}
		r.e.Mute(Mute{Node: selfID, Rule: RuleGPUTemp})
		if got := r.e.Mutes(time.Now()); len(got) != 1 || got[0].GPU == nil {
			t.Errorf("after unmuting the rule for all GPUs, mutes = %+v; want GPU 0's only", got)
		}
		// A mute expires.
		time.Sleep(2 * time.Hour)
		if got := r.e.Mutes(time.Now()); len(got) != 0 {
			t.Errorf("mutes after they expired: %+v", got)
		}
	})
}

func TestIdleAllocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rule := Rule{ID: RuleIdleGranted, Metric: MetricGrantedUtil, Op: "<", Threshold: 5, ForSeconds: 1800, Severity: Warning, Enabled: true}
		r := newRig(t, rule)
		r.feed(time.Hour, utilSample(0)) // free GPU at 0%: no alert
		if len(r.sink.all()) != 0 {
			t.Fatalf("a free idle GPU raised %+v", r.sink.all())
		}
		r.in.mu.Lock()
		r.in.grants = map[string]string{"GPU-a": "job1"}
		r.in.mu.Unlock()
		r.feed(29*time.Minute, utilSample(1))
		if len(r.sink.all()) != 0 {
			t.Fatalf("fired before 30 min")
		}
		r.feed(2*time.Minute, utilSample(1))
		as := r.sink.all()
		if len(as) != 1 || as[0].Job != "job1" || !strings.Contains(as[0].Message, "idle allocation") || as[0].Severity != Warning {
			t.Fatalf("after 31 min granted at 1%%: %+v", as)
		}
		// Another job takes the GPU: the first alert ends, the new job gets
		// its own 30 minutes.
		r.in.mu.Lock()
		r.in.grants = map[string]string{"GPU-a": "job2"}
		r.in.mu.Unlock()
		r.feed(10*time.Second, utilSample(1))
		if f, c := r.sink.count(RuleIdleGranted); f != 1 || c != 1 {
			t.Fatalf("after the grant moved: fired %d, cleared %d; want 1, 1", f, c)
		}
		// Released: the condition no longer applies.
		r.in.mu.Lock()
		r.in.grants = map[string]string{}
		r.in.mu.Unlock()
		r.feed(time.Hour, utilSample(0))
		if f, _ := r.sink.count(RuleIdleGranted); f != 1 {
			t.Fatalf("fired %d times; the second job never idled 30 min granted", f)
		}
	})
}

func TestHealthAndThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &fakeSink{}
		e := NewEvaluator(selfID, sink, discard())
		read := func(health, reason string, throttle ...string) Reading {
			return Reading{Time: time.Now(), GPUs: []GPUReading{{Index: 1, UUID: "GPU-b", Health: health, HealthReason: reason, Throttle: throttle}}}
		}
		step := func(d time.Duration, rd func() Reading) {
			for end := time.Now().Add(d); time.Now().Before(end); {
				time.Sleep(time.Second)
				e.Evaluate(rd())
			}
		}
		step(10*time.Second, func() Reading { return read("ok", "") })
		step(time.Second, func() Reading { return read("warning", "2 retired pages pending") })
		as := sink.all()
		if len(as) != 1 || as[0].Severity != Warning || !strings.Contains(as[0].Message, "warning: 2 retired pages pending") {
			t.Fatalf("health warning: %+v", as)
		}
		step(time.Second, func() Reading { return read("quarantined", "XID 79") })
		as = sink.all()
		if len(as) != 2 || as[1].ID != as[0].ID || as[1].ClearedAt != nil || as[1].Severity != Critical || !strings.Contains(as[1].Message, "quarantined: XID 79") {
			t.Fatalf("health quarantined: want the one incident raised to critical: %+v", as)
		}
		// Throttling for thermal or power reasons, 5 minutes; other reasons
		// are not throttling to alert on.
		step(10*time.Minute, func() Reading { return read("ok", "", "gpu_idle", "applications_clocks_setting") })
		if f, _ := sink.count(RuleThrottle); f != 0 {
			t.Fatalf("idle clocks raised a throttle alert")
		}
		step(299*time.Second, func() Reading { return read("ok", "", "hw_thermal_slowdown") })
		if f, _ := sink.count(RuleThrottle); f != 0 {
			t.Fatalf("throttle fired before 5 min")
		}
		step(2*time.Second, func() Reading { return read("ok", "", "hw_thermal_slowdown", "sw_power_cap") })
		if f, _ := sink.count(RuleThrottle); f != 1 {
			t.Fatalf("throttle did not fire after 5 min")
		}
	})
}

func TestFolderDiskAndOffline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.in.folders = []Folder{{Name: "data", Path: "/srv/data/set"}, {Name: "home", Path: "/home/lab"}}
		r.in.peers = []PeerReading{{Node: "PEER-BBBB", Name: "gpu2", Offline: true}}
		disks := func() agent.Sample {
			return agent.Sample{Time: time.Now(), Host: host.Stats{Disks: []host.Disk{
				{Mount: "/", UsedBytes: 50, TotalBytes: 100}, {Mount: "/srv/data", UsedBytes: 95, TotalBytes: 100}}}}
		}
		r.feed(59*time.Second, disks)
		if len(r.sink.all()) != 0 {
			t.Fatalf("fired before a minute: %+v", r.sink.all())
		}
		r.feed(2*time.Second, disks)
		var folder, offline *Alert
		for _, a := range r.sink.all() {
			switch a.Rule {
			case RuleFolderDisk:
				folder = &a
			case RuleOffline:
				offline = &a
			}
		}
		if folder == nil || folder.Folder != "data" || folder.Value != 95 {
			t.Errorf("folder alert = %+v; want shared folder data at 95%%", folder)
		}
		if offline == nil || offline.Node != "PEER-BBBB" || !strings.Contains(offline.Message, "machine gpu2 offline") {
			t.Errorf("offline alert = %+v; want about PEER-BBBB", offline)
		}
		if len(r.sink.all()) != 2 {
			t.Errorf("alerts: %+v; want the data folder's and the offline machine's only", r.sink.all())
		}
		r.in.mu.Lock()
		r.in.peers[0].Offline = false
		r.in.mu.Unlock()
		r.feed(5*time.Second, disks)
		if _, c := r.sink.count(RuleOffline); c != 0 {
			t.Errorf("offline alert cleared 5 s after the machine came back; the hold is 15 s")
		}
		r.feed(15*time.Second, disks)
		if _, c := r.sink.count(RuleOffline); c != 1 {
			t.Errorf("the machine came back: offline alert not cleared")
		}
	})
}

func TestRulesRemovedOrDisabledClear(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule)
		r.feed(121*time.Second, tempSample(90))
		off := tempRule
		off.Enabled = false
		if err := r.e.SetRules([]Rule{off}); err != nil {
			t.Fatal(err)
		}
		r.feed(time.Second, tempSample(90))
		if f, c := r.sink.count(RuleGPUTemp); f != 1 || c != 1 {
			t.Fatalf("disabling a firing rule: fired %d, cleared %d; want 1, 1", f, c)
		}
	})
}

func TestRestore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, tempRule)
		zero := 0
		old := Alert{ID: "gpu-temp.gpu0.1", Node: selfID, Rule: RuleGPUTemp, Severity: Critical, GPU: &zero, Value: 91, FiredAt: time.Now().Add(-time.Hour)}
		r.e.Restore([]Alert{old})
		r.feed(10*time.Second, tempSample(92))
		if n := len(r.sink.all()); n != 0 {
			t.Fatalf("a restored alert still firing was saved again %d times", n)
		}
		r.feed(40*time.Second, tempSample(50))
		as := r.sink.all()
		if len(as) != 1 || as[0].ID != old.ID || as[0].ClearedAt == nil || as[0].Value != 92 {
			t.Fatalf("restored alert cleared as %+v; want %s cleared with peak 92", as, old.ID)
		}
	})
}

func TestMergeAndCheck(t *testing.T) {
	th := 90.0
	rules, r, err := Merge(DefaultRules(), RuleGPUTemp, RuleUpdate{Threshold: &th})
	if err != nil || r.Threshold != 90 || r.ForSeconds != 120 || len(rules) != len(DefaultRules()) {
		t.Fatalf("Merge threshold: %+v, %v", r, err)
	}
	if _, _, err := Merge(rules, "new-rule", RuleUpdate{Threshold: &th}); err == nil {
		t.Errorf("a new rule without metric and op was accepted")
	}
	m, op := MetricPower, ">"
	if rules, r, err = Merge(rules, "gpu-power", RuleUpdate{Metric: &m, Op: &op, Threshold: &th}); err != nil || len(rules) != len(DefaultRules())+1 || !r.Enabled {
		t.Errorf("new rule: %+v, %v", r, err)
	}
	bad := []RuleUpdate{
		{Metric: ptr("rm -rf")}, {Op: ptr("!=")}, {Severity: ptr("info")}, {ForSeconds: ptr(-1)},
	}
	for _, u := range bad {
		if _, _, err := Merge(DefaultRules(), RuleGPUTemp, u); err == nil {
			t.Errorf("Merge(%+v) accepted", u)
		}
	}
	if _, _, err := Merge(DefaultRules(), "../etc", RuleUpdate{Metric: &m, Op: &op}); err == nil {
		t.Errorf("a rule ID with a path was accepted")
	}
}

func ptr[T any](v T) *T { return &v }

func TestDefaultRulesCheck(t *testing.T) {
	for _, r := range DefaultRules() {
		if err := r.Check(); err != nil {
			t.Errorf("default rule %s: %v", r.ID, err)
		}
	}
}

// TestPeerGoneClearsAtOnce: an offline machine that leaves the peers (it
// was removed from the pool, or this machine was) has its alert cleared
// at the next sample, not after the hold that a machine coming back
// waits: nothing will say it is back. One still listed and offline keeps
// its alert.
func TestPeerGoneClearsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.in.peers = []PeerReading{{Node: "PEER-BBBB", Name: "gpu2", Offline: true}, {Node: "PEER-CCCC", Name: "gpu3", Offline: true}}
		empty := func() agent.Sample { return agent.Sample{Time: time.Now()} }
		r.feed(61*time.Second, empty)
		if f, _ := r.sink.count(RuleOffline); f != 2 {
			t.Fatalf("%d offline alerts fired, want 2", f)
		}
		r.in.mu.Lock()
		r.in.peers = r.in.peers[1:] // PEER-BBBB left
		r.in.mu.Unlock()
		r.feed(time.Second, empty)
		var cleared []string
		for _, a := range r.sink.all() {
			if a.Rule == RuleOffline && !a.Active() {
				cleared = append(cleared, a.Node)
			}
		}
		if len(cleared) != 1 || cleared[0] != "PEER-BBBB" {
			t.Errorf("cleared at the next sample: %v; want [PEER-BBBB] (PEER-CCCC is still a peer, offline)", cleared)
		}
		r.feed(2*time.Minute, empty)
		if f, c := r.sink.count(RuleOffline); f != 2 || c != 1 {
			t.Errorf("2 minutes later: %d fired, %d cleared; want 2 and 1 (nothing raised about PEER-BBBB again)", f, c)
		}
	})
}
