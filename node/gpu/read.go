package gpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// readings collects what failed while reading one GPU. A reading that is not
// supported, or not permitted, is expected and left out.
type readings struct {
	errs []string
	lost bool // a call answered ERROR_GPU_IS_LOST: read no more
}

// ok reports whether ret is SUCCESS and records what failed otherwise.
func (r *readings) ok(what string, ret nvml.Return) bool {
	if r.lost && ret != nvml.SUCCESS {
		return false // said once
	}
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NO_PERMISSION:
		return false
	case nvml.ERROR_GPU_IS_LOST:
		r.lost = true
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

// readStats reads one sample of the device described by info, and
// assesses its health with what h remembers. A GPU found lost is read no
// further, now or later: its calls would only fail again.
func readStats(info Info, d Device, h *health, now time.Time) Stats {
	var r readings
	s := Stats{Index: info.Index, UUID: info.UUID, Name: info.Name, MemTotalBytes: info.MemTotalBytes,
		FanPercent: -1, PState: -1, Processes: []Process{}, Throttle: []string{}}
	if h.lost {
		s.Error, s.XIDErrors = h.lostReason, h.xids
		h.assess(&s, 0, 0, false, false, now)
		return s
	}
	var f faults
	steps := []func(){
		func() {
			if u, ret := d.GetUtilizationRates(); r.ok("utilization", ret) {
				s.UtilPercent, s.MemUtilPercent = float64(u.Gpu), float64(u.Memory)
			}
		},
		func() {
			if mem, ret := d.GetMemoryInfo(); r.ok("memory", ret) {
				s.MemUsedBytes, s.MemTotalBytes = mem.Used, mem.Total
			}
		},
		func() {
			if t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); r.ok("temperature", ret) {
				s.TempC = float64(t)
			}
		},
		func() { readPower(&r, d, &s) },
		func() { readClocks(&r, d, &s) },
		func() { s.Processes = readProcesses(&r, d) },
		func() { f = readFaults(&r, d, &s) },
	}
	for _, step := range steps {
		if step(); r.lost {
			h.lost, h.lostReason = true, "GPU is lost ("+r.errs[len(r.errs)-1]+")"
			break
		}
	}
	s.Error = r.String()
	s.XIDErrors = h.xids
	h.assess(&s, f.throttle, f.corrected, f.corrOK, f.remapFailed, now)
	return s
}

// faults is what readFaults read beside the fields of Stats.
type faults struct {
	throttle    uint64
	corrected   uint64 // volatile correctable ECC errors
	corrOK      bool   // corrected was read
	remapFailed bool
}

// readFaults reads throttling, energy, ECC counters and pending page
// retirements or row remappings. Each is NOT_SUPPORTED somewhere (no ECC on
// consumer GPUs, retirement before Ampere and remapping since): that leaves
// its zero value.
func readFaults(r *readings, d Device, s *Stats) faults {
	var f faults
	steps := []func(){
		func() {
			if bits, ret := d.GetCurrentClocksThrottleReasons(); r.ok("throttle reasons", ret) {
				f.throttle, s.Throttle = bits, throttleList(bits)
			}
		},
		func() {
			if mj, ret := d.GetTotalEnergyConsumption(); r.ok("energy", ret) {
				s.EnergyMJ = mj
			}
		},
		func() {
			if n, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r.ok("uncorrectable ECC errors", ret) {
				s.ECCUncorrected = n
			}
		},
		func() {
			if n, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); r.ok("correctable ECC errors", ret) {
				f.corrected, f.corrOK = n, true
			}
		},
		func() {
			if st, ret := d.GetRetiredPagesPendingStatus(); r.ok("retired pages", ret) && st == nvml.FEATURE_ENABLED {
				s.RetiredPending = true
			}
		},
		func() {
			if _, _, pending, failed, ret := d.GetRemappedRows(); r.ok("remapped rows", ret) {
				s.RetiredPending = s.RetiredPending || pending
				f.remapFailed = failed
			}
		},
	}
	for _, step := range steps {
		if step(); r.lost {
			break
		}
	}
	return f
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
