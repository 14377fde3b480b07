//go:build linux

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
)

// TestNVMLFullLoad: what a real H200 showed (issue 16), on an agent over
// NVIDIA's mock library (H100 profile). Every GPU at full load sits at its
// power limit (clock event reason sw_power_cap): each stays ok and raises
// no alert (the throttle rule made 2 s long for the test), while GPU 1, in
// hw_thermal_slowdown besides, is warning and raises its alert. Memory used
// is the processes', the driver's reserved memory apart, in `gpus --json`.
func TestNVMLFullLoad(t *testing.T) {
	l := newLAN(t, "gpu1")
	gpu1 := l.host("gpu1")
	m := gpu1.useMockNVML("h100.yaml")
	gpu1.agent()
	gpu1.waitDaemon()
	if _, errOut, code := gpu1.cli("alerts", "set", "gpu-throttle", "--for", "2s"); code != 0 {
		t.Fatalf("alerts set gpu-throttle --for 2s: %s", errOut)
	}
	const reserved, used = 1 << 30, 20 << 30
	m.setOverrides(fmt.Sprintf(`all:
  utilization: {gpu: 100, memory: 85}
  power: {current_draw_mw: 699000}
  clocks: {sm_current: 1755}
  clocks_throttle_reasons: {sw_power_cap: true, gpu_idle: false}
  memory: {used_bytes: %d, free_bytes: %d}
devices:
  "1":
    clocks_throttle_reasons: {sw_power_cap: true, hw_thermal_slowdown: true, gpu_idle: false}
`, used, h100.memTotal-reserved-used))
	waitFor(t, 20*time.Second, "8 GPUs at full load", func() error {
		gs, err := gpuList(gpu1, "gpu1")
		if err != nil {
			return err
		}
		for _, g := range gs {
			if g.UtilPercent != 100 || (g.Index == 1) != (g.Health == "warning") {
				return fmt.Errorf("gpu %d: %v%%, %s", g.Index, g.UtilPercent, g.Health)
			}
		}
		return nil
	})
	// A rule on the host that holds at once and fires after 3 s: once it
	// has fired, the GPUs were judged over 3 s of full load, longer than
	// the throttle rule's 2 s.
	if _, errOut, code := gpu1.cli("alerts", "set", "canary", "--metric", "host_mem_percent", "--op", ">",
		"--threshold", "0", "--for", "3s", "--severity", "warning"); code != 0 {
		t.Fatalf("alerts set canary: %s", errOut)
	}
	waitAlert(t, gpu1, "the canary rule", func(a app.Alert) bool { return a.Rule == "canary" })
	as, err := gpu1.client().Alerts(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	gpu1Alerts := 0
	for _, a := range as {
		switch {
		case a.Rule == "canary":
		case a.GPU != nil && *a.GPU == 1:
			gpu1Alerts++
			if strings.Contains(a.Message, "sw_power_cap") {
				t.Errorf("gpu 1's alert names sw_power_cap: %+v", a)
			}
		default:
			t.Errorf("an alert at full load: %+v", a)
		}
	}
	if gpu1Alerts == 0 {
		t.Errorf("gpu 1 in hw_thermal_slowdown raised no alert: %+v", as)
	}

	gs, err := callJSON[[]map[string]any](gpu1, "gpus", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 8 {
		t.Fatalf("gpus --json lists %d GPUs", len(gs))
	}
	for i, g := range gs {
		throttle := fmt.Sprint(g["throttle"])
		if g["mem_used_bytes"] != float64(used) || g["mem_reserved_bytes"] != float64(reserved) {
			t.Errorf("gpu %d: used %v, reserved %v; want %d (the processes') and %d (the driver's)", i,
				g["mem_used_bytes"], g["mem_reserved_bytes"], used, reserved)
		}
		if !strings.Contains(throttle, "sw_power_cap") {
			t.Errorf("gpu %d at its power limit: throttle %s", i, throttle)
		}
		wantHealth := "ok"
		if i == 1 {
			wantHealth = "warning"
		}
		if g["health"] != wantHealth {
			t.Errorf("gpu %d: health %v (%v); want %s", i, g["health"], g["health_reason"], wantHealth)
		}
	}
	if r := gs[1]["health_reason"]; r != "throttled: hw_thermal_slowdown" {
		t.Errorf("gpu 1: %v; want \"throttled: hw_thermal_slowdown\"", r)
	}
}
