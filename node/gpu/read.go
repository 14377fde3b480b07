package gpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// readings collects what failed while reading one GPU. A reading that is not
// supported, or not permitted, is expected and left out.
type readings struct {
	errs []string
}

// ok reports whether ret is SUCCESS and records what failed otherwise.
func (r *readings) ok(what string, ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NO_PERMISSION:
		return false
	}
	r.errs = append(r.errs, fmt.Sprintf("read %s: %v", what, ret))
	return false
}

func (r *readings) String() string { return strings.Join(r.errs, "; ") }

// readInfo reads what Open records about device i.
func readInfo(i int, d Device) Info {
	var r readings
	info := Info{Index: i}
	if uuid, ret := d.GetUUID(); r.ok("uuid", ret) {
		info.UUID = uuid
	}
	if name, ret := d.GetName(); r.ok("name", ret) {
		info.Name = name
	}
	if mem, ret := d.GetMemoryInfo(); r.ok("memory", ret) {
		info.MemTotalBytes = mem.Total
	}
	if mw, ret := d.GetEnforcedPowerLimit(); r.ok("power limit", ret) {
		info.PowerLimitW = float64(mw) / 1000
	}
	return info
}

// readStats reads one sample of the device described by info.
func readStats(info Info, d Device) Stats {
	var r readings
	s := Stats{Index: info.Index, UUID: info.UUID, Name: info.Name, MemTotalBytes: info.MemTotalBytes,
		FanPercent: -1, PState: -1, Processes: []Process{}}
	if u, ret := d.GetUtilizationRates(); r.ok("utilization", ret) {
		s.UtilPercent, s.MemUtilPercent = float64(u.Gpu), float64(u.Memory)
	}
	if mem, ret := d.GetMemoryInfo(); r.ok("memory", ret) {
		s.MemUsedBytes, s.MemTotalBytes = mem.Used, mem.Total
	}
	if t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); r.ok("temperature", ret) {
		s.TempC = float64(t)
	}
	readPower(&r, d, &s)
	readClocks(&r, d, &s)
	s.Processes = readProcesses(&r, d)
	s.Error = r.String()
	return s
}

func readPower(r *readings, d Device, s *Stats) {
	if mw, ret := d.GetPowerUsage(); r.ok("power", ret) {
		s.PowerW = float64(mw) / 1000
	}
	if mw, ret := d.GetEnforcedPowerLimit(); r.ok("power limit", ret) {
		s.PowerLimitW = float64(mw) / 1000
	}
	if fan, ret := d.GetFanSpeed(); r.ok("fan speed", ret) {
		s.FanPercent = int(fan)
	}
	if p, ret := d.GetPerformanceState(); r.ok("performance state", ret) && p != nvml.PSTATE_UNKNOWN {
		s.PState = int(p)
	}
}

func readClocks(r *readings, d Device, s *Stats) {
	if mhz, ret := d.GetClockInfo(nvml.CLOCK_SM); r.ok("sm clock", ret) {
		s.SMClockMHz = int(mhz)
	}
	if mhz, ret := d.GetClockInfo(nvml.CLOCK_MEM); r.ok("memory clock", ret) {
		s.MemClockMHz = int(mhz)
	}
}

// readProcesses lists compute and graphics processes once each, by PID.
func readProcesses(r *readings, d Device) []Process {
	var all []nvml.ProcessInfo
	if ps, ret := d.GetComputeRunningProcesses(); r.ok("compute processes", ret) {
		all = append(all, ps...)
	}
	if ps, ret := d.GetGraphicsRunningProcesses(); r.ok("graphics processes", ret) {
		all = append(all, ps...)
	}
	out := make([]Process, 0, len(all))
	for _, p := range all {
		mem := p.UsedGpuMemory
		if mem == math.MaxUint64 { // NVML_VALUE_NOT_AVAILABLE
			mem = 0
		}
		i := slices.IndexFunc(out, func(q Process) bool { return q.PID == p.Pid })
		if i < 0 {
			out = append(out, Process{PID: p.Pid, MemBytes: mem})
		} else {
			out[i].MemBytes = max(out[i].MemBytes, mem)
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return cmp.Compare(a.PID, b.PID) })
	return out
}
