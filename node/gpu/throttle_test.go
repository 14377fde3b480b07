//go:build linux && cgo

package gpu

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// throttleNames writes NVML's bits out (health.go builds without cgo); they
// must be go-nvml's.
func TestThrottleBitsAreNVML(t *testing.T) {
	want := map[string]uint64{
		"applications_clocks_setting": nvml.ClocksThrottleReasonApplicationsClocksSetting,
		"sw_power_cap":                nvml.ClocksThrottleReasonSwPowerCap,
		"hw_slowdown":                 nvml.ClocksThrottleReasonHwSlowdown,
		"sync_boost":                  nvml.ClocksThrottleReasonSyncBoost,
		"sw_thermal_slowdown":         nvml.ClocksThrottleReasonSwThermalSlowdown,
		"hw_thermal_slowdown":         nvml.ClocksThrottleReasonHwThermalSlowdown,
		"hw_power_brake_slowdown":     nvml.ClocksThrottleReasonHwPowerBrakeSlowdown,
		"display_clocks_setting":      nvml.ClocksThrottleReasonDisplayClockSetting,
	}
	if len(throttleNames) != len(want) {
		t.Fatalf("%d throttle names, want %d", len(throttleNames), len(want))
	}
	for _, n := range throttleNames {
		if n.bit != want[n.name] {
			t.Errorf("%s: bit %#x, go-nvml's %#x", n.name, n.bit, want[n.name])
		}
	}
}
