package alerts

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
)

// activeOf is what a restarted agent reads back from the replica: the last
// record of each alert, those still active.
func activeOf(saved []Alert) []Alert {
	last := map[string]Alert{}
	var order []string
	for _, a := range saved {
		if _, ok := last[a.ID]; !ok {
			order = append(order, a.ID)
		}
		last[a.ID] = a
	}
	var out []Alert
	for _, id := range order {
		if a := last[id]; a.Active() {
			out = append(out, a)
		}
	}
	return out
}

// restart is the agent restarting: a new evaluator over the same rules,
// restoring what the first one left firing.
func restart(t *testing.T, before *rig, in Inputs, rules ...Rule) *rig {
	t.Helper()
	after := newRigWith(t, in, rules...)
	after.e.Restore(activeOf(before.sink.all()))
	return after
}

// TestRestartKeepsIncidentMessage: an incident folding several conditions
// of one GPU (temperature, throttle, health) keeps its message across an
// agent restart. The restored condition used to carry the whole folded
// message, and the folded conditions firing again added their clauses a
// second time ("…; also GPU 0 health is warning…; also GPU 0 health is
// warning…").
func TestRestartKeepsIncidentMessage(t *testing.T) {
	rules := []Rule{tempRule,
		{ID: RuleThrottle, Metric: MetricThrottle, Op: ">", Threshold: 0, ForSeconds: 10, Severity: Warning, Enabled: true},
		{ID: RuleGPUHealth, Metric: MetricHealth, Op: ">=", Threshold: 1, ForSeconds: 10, Severity: Warning, Enabled: true},
	}
	synctest.Test(t, func(t *testing.T) {
		in := &fakeInputs{grants: map[string]string{}}
		before := newRigWith(t, in, rules...)
		before.feed(3*time.Minute, hotSample(91))
		act := before.e.Active()
		if len(act) != 1 || len(act[0].Folded) != 2 {
			t.Fatalf("before the restart: %+v; want one incident folding two rules", act)
		}
		want := act[0].Message

		after := restart(t, before, in, rules...)
		after.feed(3*time.Minute, hotSample(91))
		act = after.e.Active()
		if len(act) != 1 {
			t.Fatalf("after the restart: %+v; want the one incident", act)
		}
		if got := act[0].Message; got != want {
			t.Errorf("after the restart the message is\n%q\nwant it unchanged:\n%q", got, want)
		}
		for _, clause := range []string{"health is warning", "throttled (hw_thermal_slowdown)", "; also "} {
			if n := strings.Count(act[0].Message, clause); n != 1 {
				t.Errorf("message %q says %q %d times, want once", act[0].Message, clause, n)
			}
		}
	})
}

// TestRestartKeepsIdleDuration: an idle allocation's "for 8m25s" (how
// long the job had held its GPU idle when it fired, here after a gap in the
// samples) stays after an agent
// restart; it used to become the rule's duration ("for 1m0s").
func TestRestartKeepsIdleDuration(t *testing.T) {
	rule := Rule{ID: RuleIdleGranted, Metric: MetricGrantedUtil, Op: "<", Threshold: 5, ForSeconds: 60, Severity: Warning, Enabled: true}
	idle := func() agent.Sample {
		return agent.Sample{Time: time.Now(), GPUs: []gpu.Stats{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}}
	}
	synctest.Test(t, func(t *testing.T) {
		in := &fakeInputs{grants: map[string]string{}}
		before := newRigWith(t, in, rule)
		before.feed(7*time.Minute, idle) // idle, but not granted: no condition yet
		in.mu.Lock()
		in.grants = map[string]string{"GPU-a": "j1", "GPU-b": "j1"}
		in.mu.Unlock()
		before.feed(time.Second, idle)
		time.Sleep(8*time.Minute + 24*time.Second) // no sample meanwhile (the agent was busy, the machine asleep)
		before.feed(time.Second, idle)
		act := before.e.Active()
		if len(act) != 1 || !strings.Contains(act[0].Message, " for ") {
			t.Fatalf("before the restart: %+v; want one idle incident saying for how long", act)
		}
		want := act[0].Message

		after := restart(t, before, in, rule)
		after.feed(2*time.Minute, idle)
		act = after.e.Active()
		if len(act) != 1 {
			t.Fatalf("after the restart: %+v; want the one incident", act)
		}
		if got := act[0].Message; got != want {
			t.Errorf("after the restart the message is\n%q\nwant it unchanged:\n%q", got, want)
		}
	})
}
