package alerts

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestThrottleSlowdownsOnly: a GPU at its power limit under full load
// (sw_power_cap), with sync boost or application clocks, is not throttled;
// the slowdowns are.
func TestThrottleSlowdownsOnly(t *testing.T) {
	tests := []struct {
		throttle []string
		want     []string
	}{
		{[]string{"sw_power_cap"}, nil},
		{[]string{"sw_power_cap", "sync_boost", "applications_clocks_setting", "gpu_idle"}, nil},
		{[]string{"sw_power_cap", "hw_thermal_slowdown"}, []string{"hw_thermal_slowdown"}},
		{[]string{"hw_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"}, []string{"hw_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown"}},
	}
	for _, tt := range tests {
		n, which := throttling(GPUReading{Throttle: tt.throttle})
		if int(n) != len(tt.want) || !slices.Equal(which, tt.want) {
			t.Errorf("throttling(%v) = %v, %v; want %v", tt.throttle, n, which, tt.want)
		}
	}
}

// TestFullLoadFiresNothing: ten minutes at the power limit under full load
// (what every training GPU of a lab does all day) raise no alert.
func TestFullLoadFiresNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &fakeSink{}
		e := NewEvaluator(selfID, sink, discard())
		for end := time.Now().Add(10 * time.Minute); time.Now().Before(end); {
			time.Sleep(time.Second)
			e.Evaluate(Reading{Time: time.Now(), GPUs: []GPUReading{{Index: 0, UUID: "GPU-a", Health: "ok",
				UtilPercent: 100, PowerW: 699, TempC: 70, Throttle: []string{"sw_power_cap"}, Job: "job1"}}})
		}
		if as := sink.all(); len(as) != 0 {
			t.Fatalf("full load at the power limit raised %+v", as)
		}
	})
}
