//go:build linux && cgo

package gpu_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
)

// The cost of the whole agent on an 8-GPU machine with real NVML, modelled:
//
//	CPU = base + 8 × Σ over NVML calls (calls per GPU per second × CPU per call)
//
// - calls per GPU per second: counted here, by running this Sampler over
//   ten minutes of samples (its clock driven by the test) on fake GPUs that
//   answer as the H200 did (no fan), a grant beginning or ending on each
//   GPU in the window (an energy read beside the minute's);
// - CPU per call: measured on a real H200 (driver 580, persistence on;
//   ENVIRONMENT.md, issue 16), each call timed 100 times with
//   BenchmarkRealCalls' method; the calls that were not timed there are
//   given 10 µs, ten times the measured sub-microsecond median of their
//   kind;
// - base: BenchmarkAgentCost with LABPOOL_BENCH_GPUS=sim (the same agent
//   with 8 simulated GPUs, no NVML library), 3 members following it.
//
// Memory: base RSS from the same run, plus 5.5 MB for the NVML library (what
// NVIDIA's mock library added to the agent's RSS in /proc/PID/smaps; the
// real library's was not measured).

// h200CallCPU is the CPU time of one call on the H200, by method.
var h200CallCPU = map[string]time.Duration{
	"GetTotalEnergyConsumption":       3800 * time.Microsecond, // 2.8–3.8 ms: the worst
	"GetFanSpeed":                     130 * time.Microsecond,  // NOT_SUPPORTED
	"GetMemoryInfo_v2":                9 * time.Microsecond,
	"GetPowerUsage":                   1500 * time.Nanosecond,
	"GetUtilizationRates":             time.Microsecond, // "under 1 µs at the median"
	"GetTemperature":                  time.Microsecond,
	"GetClockInfo":                    time.Microsecond,
	"GetCurrentClocksThrottleReasons": time.Microsecond,
	"GetTotalEccErrors":               time.Microsecond,
	"GetRemappedRows":                 time.Microsecond,
}

// untimedCallCPU is what a call not timed on the H200 is given.
const untimedCallCPU = 10 * time.Microsecond

// Measured base: LABPOOL_BIN=$PWD/bin/labpool LABPOOL_BENCH_GPUS=sim go test
// -run '^$' -bench 'AgentCost$' -benchtime 3x ./app/e2e (three 20 s windows;
// busiest 0.40%), on the 2-core VM of issue 16.
const (
	baseCPUPercent = 0.35 // % of one core
	baseRSSMB      = 31.9
	nvmlLibRSSMB   = 5.5
)

// Budget of issue 16 for the whole agent on an 8-GPU machine.
const (
	budgetCPUPercent = 1.0
	budgetRSSMB      = 40.0
)

func TestModelRealAgent8GPU(t *testing.T) {
	const gpus, window = 8, 10 * time.Minute
	lib := gputest.NewLibrary(gpus) // NewDevice: no fan, as on SXM boards
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := clocked(t, lib, &now)
	start := now
	every(t, s, &now, window, func([]gpu.Stats) {
		// A grant's edge on every GPU in the window: six an hour, more
		// often than a lab's GPUs change hands.
		if now.Sub(start) == window/2 {
			uuids := make([]string, gpus)
			for i, d := range lib.Devices {
				uuids[i] = d.UUID
			}
			s.ReadEnergy(uuids...)
		}
	})
	methods := []string{}
	for m := range h200CallCPU {
		methods = append(methods, m)
	}
	for _, m := range []string{"GetPerformanceState", "GetComputeRunningProcesses", "GetGraphicsRunningProcesses",
		"GetRetiredPagesPendingStatus", "GetEnforcedPowerLimit", "GetMemoryInfo", "GetName", "GetUUID"} {
		methods = append(methods, m)
	}
	type row struct {
		method string
		rate   float64 // calls per GPU per second
		cost   time.Duration
		timed  bool
	}
	var rows []row
	var perGPU float64 // CPU seconds per GPU per second
	var rate float64
	for _, m := range methods {
		n := 0
		for _, d := range lib.Devices {
			n += d.Calls(m)
		}
		r := float64(n) / gpus / window.Seconds()
		cost, timed := h200CallCPU[m]
		if !timed {
			cost = untimedCallCPU
		}
		rows = append(rows, row{m, r, cost, timed})
		perGPU += r * cost.Seconds()
		rate += r
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.rate*b.cost.Seconds(), a.rate*a.cost.Seconds()) })
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %12s %10s %14s\n", "NVML call", "calls/GPU/s", "CPU/call", "CPU µs/GPU/s")
	for _, r := range rows {
		mark := ""
		if !r.timed {
			mark = " (not timed on the H200)"
		}
		fmt.Fprintf(&b, "%-34s %12.4f %10v %14.2f%s\n", r.method, r.rate, r.cost, r.rate*float64(r.cost.Microseconds()), mark)
	}
	nvmlPct := 100 * perGPU * gpus
	fmt.Fprintf(&b, "NVML: %.2f calls/GPU/s, %.1f µs of CPU per GPU per second; 8 GPUs: %.3f%% of a core\n",
		rate, perGPU*1e6, nvmlPct)
	fmt.Fprintf(&b, "agent without NVML (BenchmarkAgentCost, sim, 3 members): %.2f%% of a core, %.1f MB\n", baseCPUPercent, baseRSSMB)
	total, rss := baseCPUPercent+nvmlPct, baseRSSMB+nvmlLibRSSMB
	fmt.Fprintf(&b, "whole agent, 8 real GPUs: %.2f%% of a core (budget %.0f%%), %.1f MB (budget %.0f MB)\n",
		total, budgetCPUPercent, rss, budgetRSSMB)
	// The same model for the sampler before issue 16: each call every second.
	var before time.Duration
	for m, n := range beforeCalls {
		cost, ok := h200CallCPU[m]
		if !ok {
			cost = untimedCallCPU
		}
		before += time.Duration(n) * cost
	}
	fmt.Fprintf(&b, "NVML before issue 16 (each call every second): %.1f µs per GPU per second; 8 GPUs: %.2f%% of a core\n",
		float64(before.Nanoseconds())/1e3, 100*before.Seconds()*gpus)
	t.Log("\n" + b.String())
	if total >= budgetCPUPercent || rss >= budgetRSSMB {
		t.Errorf("modelled agent: %.2f%% of a core, %.1f MB; over the budget of %.0f%% and %.0f MB", total, rss, budgetCPUPercent, budgetRSSMB)
	}
	if lib.Devices[0].Calls("GetTotalEnergyConsumption") > 1+int(window/time.Minute)+1 {
		t.Errorf("energy read %d times in 10 min", lib.Devices[0].Calls("GetTotalEnergyConsumption"))
	}
}

// beforeCalls is what the sampler before issue 16 called per GPU per
// sample (BenchmarkRealSample on the mock: 17 calls).
var beforeCalls = map[string]int{
	"GetUtilizationRates": 1, "GetMemoryInfo": 1, "GetTemperature": 1, "GetPowerUsage": 1,
	"GetEnforcedPowerLimit": 1, "GetFanSpeed": 1, "GetPerformanceState": 1, "GetClockInfo": 2,
	"GetComputeRunningProcesses": 1, "GetGraphicsRunningProcesses": 1, "GetCurrentClocksThrottleReasons": 1,
	"GetTotalEnergyConsumption": 1, "GetTotalEccErrors": 2, "GetRetiredPagesPendingStatus": 1, "GetRemappedRows": 1,
}
